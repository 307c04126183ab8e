import { useState } from "preact/hooks";
import { call, get } from "../api.ts";
import { useCaller } from "../caller.ts";
import { confirmed } from "../components/Confirmed.ts";
import { NumberField, SelectField, TextField } from "../components/fields.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { useAction, useLoad } from "../hooks.ts";
import { mayAdminister } from "../session.ts";
import { usePageTitle } from "../title.ts";
import type { List, Provider, RoutingRule } from "../types.ts";

interface TargetDraft {
  providerName: string;
  upstreamModel: string;
  weight: string;
}

interface Draft {
  priority: string;
  models: string;
  targets: TargetDraft[];
}

/** The most targets a rule may have (docs/gateway.md). */
const MAX_TARGETS = 8;

function draftOf(rule: RoutingRule | undefined, firstProvider: string): Draft {
  if (!rule) return { priority: "100", models: "", targets: [{ providerName: firstProvider, upstreamModel: "", weight: "" }] };
  return {
    priority: String(rule.priority),
    models: rule.models.join(", "),
    targets: rule.targets.map((t) => ({ providerName: t.providerName, upstreamModel: t.upstreamModel ?? "", weight: t.weight === null ? "" : String(t.weight) })),
  };
}

function bodyOf(draft: Draft) {
  return {
    priority: Number(draft.priority),
    models: draft.models.split(",").map((m) => m.trim()).filter(Boolean),
    targets: draft.targets.map((t) => ({
      providerName: t.providerName,
      upstreamModel: t.upstreamModel.trim() || undefined,
      weight: t.weight.trim() === "" ? undefined : Number(t.weight),
    })),
  };
}

/** Routing rules, first match by priority: read by every role, changed by admins. */
export function RoutingRulesPage() {
  usePageTitle("Routing rules");
  const admin = mayAdminister(useCaller());
  const rules = useLoad(() => get<List<RoutingRule>>("/v1/gateway/routing-rules"), []);
  const providers = useLoad(() => get<List<Provider>>("/v1/gateway/providers"), []);
  const [editing, setEditing] = useState<string | "new" | null>(null);
  const remove = useAction();
  const providerNames = providers.data?.items.map((p) => p.name) ?? [];
  const saved = () => {
    setEditing(null);
    rules.reload();
  };
  const drop = (rule: RoutingRule) => {
    if (!confirmed(`Delete the rule of priority ${rule.priority}?`)) return;
    void remove.run(async () => {
      await call("DELETE", `/v1/gateway/routing-rules/${rule.id}`);
      rules.reload();
    });
  };
  const sorted = [...(rules.data?.items ?? [])].sort((a, b) => a.priority - b.priority);
  return (
    <>
      <h1>Routing rules</h1>
      <p class="lead">The first rule by priority (lowest first) whose models match a call decides where it goes; its targets are tried in order, or drawn by weight.</p>
      {admin && editing !== "new" ? (
        <button type="button" class="primary" onClick={() => setEditing("new")} disabled={providerNames.length === 0}>
          Add rule
        </button>
      ) : null}
      {editing === "new" ? <RuleForm providerNames={providerNames} onSaved={saved} onCancel={() => setEditing(null)} /> : null}
      <ErrorNotice error={rules.error ?? remove.error} />
      {!rules.data ? (
        rules.loading ? <Loading /> : null
      ) : sorted.length === 0 ? (
        <Empty>No routing rule: the gateway routes no model yet.</Empty>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col" class="num">Priority</th>
                <th scope="col">Models</th>
                <th scope="col">Targets</th>
                {admin ? (
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {sorted.map((rule) =>
                editing === rule.id ? (
                  <tr key={rule.id}>
                    <td colSpan={4}>
                      <RuleForm rule={rule} providerNames={providerNames} onSaved={saved} onCancel={() => setEditing(null)} />
                    </td>
                  </tr>
                ) : (
                  <tr key={rule.id}>
                    <th scope="row" class="num">
                      {rule.priority}
                    </th>
                    <td>{rule.models.length ? rule.models.map((m) => <code key={m} class="tag">{m}</code>) : <span class="muted">every model</span>}</td>
                    <td>
                      <ol class="targets">
                        {rule.targets.map((t, i) => (
                          <li key={i}>
                            {t.providerName}
                            {t.upstreamModel ? ` as ${t.upstreamModel}` : ""}
                            {t.weight !== null ? ` (weight ${t.weight})` : ""}
                          </li>
                        ))}
                      </ol>
                    </td>
                    {admin ? (
                      <td class="row-actions">
                        <button type="button" class="small-button" onClick={() => setEditing(rule.id)}>
                          Edit<span class="visually-hidden"> rule {rule.priority}</span>
                        </button>
                        <button type="button" class="small-button danger" onClick={() => drop(rule)}>
                          Delete<span class="visually-hidden"> rule {rule.priority}</span>
                        </button>
                      </td>
                    ) : null}
                  </tr>
                ),
              )}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function RuleForm(props: { rule?: RoutingRule; providerNames: string[]; onSaved(): void; onCancel(): void }) {
  const creating = !props.rule;
  const [draft, setDraft] = useState<Draft>(() => draftOf(props.rule, props.providerNames[0] ?? ""));
  const save = useAction();
  const setTarget = (i: number, changes: Partial<TargetDraft>) => setDraft({ ...draft, targets: draft.targets.map((t, k) => (k === i ? { ...t, ...changes } : t)) });
  const providerOptions = props.providerNames.map((name) => [name, name] as const);
  const submit = async (event: Event) => {
    event.preventDefault();
    const ok = await save.run(() =>
      creating
        ? call("POST", "/v1/gateway/routing-rules", { body: bodyOf(draft) })
        : call("PATCH", `/v1/gateway/routing-rules/${props.rule!.id}`, { body: bodyOf(draft) }),
    );
    if (ok) props.onSaved();
  };
  return (
    <form class="card inline-form" onSubmit={submit} aria-label={creating ? "New routing rule" : "Edit routing rule"}>
      <h2>{creating ? "New routing rule" : `Edit rule ${props.rule!.priority}`}</h2>
      <div class="grid-fields">
        <NumberField label="Priority" value={draft.priority} onInput={(priority) => setDraft({ ...draft, priority })} required step={1} hint="Lower runs first." />
        <TextField label="Models" value={draft.models} onInput={(models) => setDraft({ ...draft, models })} placeholder="claude-*, gpt-4o" hint="Comma-separated names or globs; empty matches every model." />
      </div>
      <fieldset>
        <legend>Targets, in order</legend>
        {draft.targets.map((target, i) => (
          <div key={i} class="target-row">
            <SelectField label={`Provider ${i + 1}`} value={target.providerName} options={providerOptions} onChange={(providerName) => setTarget(i, { providerName })} />
            <TextField label={`Upstream model ${i + 1}`} value={target.upstreamModel} onInput={(upstreamModel) => setTarget(i, { upstreamModel })} placeholder="as called" />
            <NumberField label={`Weight ${i + 1}`} value={target.weight} onInput={(weight) => setTarget(i, { weight })} min={0} max={1000} step={1} />
            {draft.targets.length > 1 ? (
              <button type="button" class="small-button" onClick={() => setDraft({ ...draft, targets: draft.targets.filter((_, k) => k !== i) })}>
                Remove<span class="visually-hidden"> target {i + 1}</span>
              </button>
            ) : null}
          </div>
        ))}
        {draft.targets.length < MAX_TARGETS ? (
          <button type="button" class="small-button" onClick={() => setDraft({ ...draft, targets: [...draft.targets, { providerName: props.providerNames[0] ?? "", upstreamModel: "", weight: "" }] })}>
            Add target
          </button>
        ) : null}
      </fieldset>
      <ErrorNotice error={save.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={save.busy}>
          {creating ? "Add rule" : "Save"}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
