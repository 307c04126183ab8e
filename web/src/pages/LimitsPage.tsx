import { useState } from "preact/hooks";
import { call, get } from "../api.ts";
import { useCaller } from "../caller.ts";
import { confirmed } from "../components/Confirmed.ts";
import { NumberField, SelectField } from "../components/fields.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { formatDate, formatInteger, formatUsd } from "../format.ts";
import { useAction, useLoad } from "../hooks.ts";
import { mayAdminister } from "../session.ts";
import { usePageTitle } from "../title.ts";
import type { GatewayKey, LimitConsumption, LimitUnit, List, Named, UsageLimit } from "../types.ts";

const scopes = [
  ["key", "Key"],
  ["user", "User"],
  ["group", "Group"],
] as const;
const periods = [
  ["daily", "Daily"],
  ["weekly", "Weekly"],
  ["monthly", "Monthly"],
  ["all_time", "All time"],
] as const;
const units = [
  ["tokens", "Tokens"],
  ["usd", "US dollars"],
  ["requests", "Requests"],
] as const;

/** The field of a limit's amount, by unit, in requests and answers alike. */
const amountField: Record<LimitUnit, "tokenLimit" | "costLimitUsd" | "requestLimit"> = { tokens: "tokenLimit", usd: "costLimitUsd", requests: "requestLimit" };

const amountOf = (limit: UsageLimit) => Number(limit[amountField[limit.unit]] ?? 0);

/** Used and reserved come in the limit's unit, dollars as micro-dollars. */
function formatAmount(unit: LimitUnit, amount: number, micro = false): string {
  if (unit === "usd") return formatUsd(micro ? amount / 1_000_000 : amount);
  return `${formatInteger(amount)} ${unit}`;
}

interface Subjects {
  key: Named[];
  user: Named[];
  group: Named[];
}

/** Usage limits with what each has used this period: read by every role, set by admins. */
export function LimitsPage() {
  usePageTitle("Usage limits");
  const admin = mayAdminister(useCaller());
  const limits = useLoad(() => get<List<LimitConsumption>>("/v1/gateway/usage/limits"), []);
  const subjects = useLoad(loadSubjects, []);
  const [editing, setEditing] = useState<string | "new" | null>(null);
  const remove = useAction();
  const subjectName = (limit: UsageLimit) => subjects.data?.[limit.scope].find((s) => s.id === limit.subjectId)?.name ?? limit.subjectId;
  const saved = () => {
    setEditing(null);
    limits.reload();
  };
  const drop = (limit: UsageLimit) => {
    if (!confirmed(`Delete the ${limit.period} limit of ${subjectName(limit)}?`)) return;
    void remove.run(async () => {
      await call("DELETE", `/v1/gateway/usage-limits/${limit.id}`);
      limits.reload();
    });
  };
  return (
    <>
      <h1>Usage limits</h1>
      <p class="lead">A call that would pass a limit of its key, its owner or one of its groups is refused with 429 (docs/usage-limits.md).</p>
      {admin && editing !== "new" ? (
        <button type="button" class="primary" onClick={() => setEditing("new")}>
          Add limit
        </button>
      ) : null}
      {editing === "new" && subjects.data ? <NewLimitForm subjects={subjects.data} onSaved={saved} onCancel={() => setEditing(null)} /> : null}
      <ErrorNotice error={limits.error ?? remove.error} />
      {!limits.data ? (
        limits.loading ? <Loading /> : null
      ) : limits.data.items.length === 0 ? (
        <Empty>No usage limit.</Empty>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Applies to</th>
                <th scope="col">Period</th>
                <th scope="col">Limit</th>
                <th scope="col">Used this period</th>
                <th scope="col">Resets</th>
                {admin ? (
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {limits.data.items.map(({ limit, used, reserved, resetsAt }) => {
                const amount = amountOf(limit);
                const spent = limit.unit === "usd" ? used / 1_000_000 : used;
                return (
                  <tr key={limit.id}>
                    <th scope="row">
                      {limit.scope} {subjectName(limit)}
                    </th>
                    <td>{periods.find(([p]) => p === limit.period)?.[1]}</td>
                    <td>
                      {editing === limit.id ? (
                        <EditAmountForm limit={limit} onSaved={saved} onCancel={() => setEditing(null)} />
                      ) : (
                        formatAmount(limit.unit, amount)
                      )}
                    </td>
                    <td>
                      <meter min={0} max={amount || 1} value={Math.min(spent, amount)} aria-label={`Used of the limit of ${subjectName(limit)}`} />{" "}
                      {formatAmount(limit.unit, used, true)}
                      {reserved > 0 ? <span class="muted small"> (+{formatAmount(limit.unit, reserved, true)} in flight)</span> : null}
                    </td>
                    <td>{resetsAt ? formatDate(resetsAt) : "never"}</td>
                    {admin ? (
                      <td class="row-actions">
                        {editing === limit.id ? null : (
                          <button type="button" class="small-button" onClick={() => setEditing(limit.id)}>
                            Edit<span class="visually-hidden"> the limit of {subjectName(limit)}</span>
                          </button>
                        )}
                        <button type="button" class="small-button danger" onClick={() => drop(limit)}>
                          Delete<span class="visually-hidden"> the limit of {subjectName(limit)}</span>
                        </button>
                      </td>
                    ) : null}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

async function loadSubjects(): Promise<Subjects> {
  const [keys, users, groups] = await Promise.all([
    get<List<GatewayKey>>("/v1/gateway/keys"),
    get<List<Named>>("/v1/gateway/users"),
    get<List<Named>>("/v1/gateway/groups"),
  ]);
  return { key: keys.items.map((k) => ({ id: k.id, name: k.name ?? k.keyPrefix })), user: users.items, group: groups.items };
}

function NewLimitForm(props: { subjects: Subjects; onSaved(): void; onCancel(): void }) {
  const [scope, setScope] = useState<UsageLimit["scope"]>("key");
  const [subjectId, setSubjectId] = useState(props.subjects.key[0]?.id ?? "");
  const [period, setPeriod] = useState<UsageLimit["period"]>("daily");
  const [unit, setUnit] = useState<LimitUnit>("tokens");
  const [amount, setAmount] = useState("");
  const save = useAction();
  const choices = props.subjects[scope].map((s) => [s.id, s.name] as const);
  const submit = async (event: Event) => {
    event.preventDefault();
    const ok = await save.run(() => call("POST", "/v1/gateway/usage-limits", { body: { scope, subjectId, period, [amountField[unit]]: Number(amount) } }));
    if (ok) props.onSaved();
  };
  return (
    <form class="card inline-form" onSubmit={submit} aria-label="New usage limit">
      <h2>New usage limit</h2>
      <div class="grid-fields">
        <SelectField
          label="Applies to"
          value={scope}
          options={scopes}
          onChange={(value) => {
            setScope(value);
            setSubjectId(props.subjects[value][0]?.id ?? "");
          }}
        />
        <SelectField label={scopes.find(([s]) => s === scope)![1]} value={subjectId} options={choices} onChange={(value) => setSubjectId(value)} required />
        <SelectField label="Period" value={period} options={periods} onChange={(value) => setPeriod(value)} />
        <SelectField label="Unit" value={unit} options={units} onChange={(value) => setUnit(value)} />
        <NumberField label="Limit" value={amount} onInput={setAmount} required min={0} step={unit === "usd" ? "any" : 1} />
      </div>
      <ErrorNotice error={save.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={save.busy || subjectId === ""}>
          Add limit
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function EditAmountForm(props: { limit: UsageLimit; onSaved(): void; onCancel(): void }) {
  const [amount, setAmount] = useState(String(amountOf(props.limit)));
  const save = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const ok = await save.run(() => call("PATCH", `/v1/gateway/usage-limits/${props.limit.id}`, { body: { [amountField[props.limit.unit]]: Number(amount) } }));
    if (ok) props.onSaved();
  };
  return (
    <form class="inline" onSubmit={submit} aria-label="Change the limit">
      <NumberField label={`Limit (${props.limit.unit})`} value={amount} onInput={setAmount} required min={0} step={props.limit.unit === "usd" ? "any" : 1} />
      <ErrorNotice error={save.error} />
      <button type="submit" class="small-button primary" disabled={save.busy}>
        Save
      </button>
      <button type="button" class="small-button" onClick={props.onCancel}>
        Cancel
      </button>
    </form>
  );
}
