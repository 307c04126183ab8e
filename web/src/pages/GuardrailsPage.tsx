import { useState } from "preact/hooks";
import { call, get } from "../api.ts";
import { useCaller } from "../caller.ts";
import { confirmed } from "../components/Confirmed.ts";
import { CheckField, NumberField, SelectField, TextField } from "../components/fields.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { formatNumber } from "../format.ts";
import { useAction, useLoad } from "../hooks.ts";
import { mayAdminister } from "../session.ts";
import { usePageTitle } from "../title.ts";
import type { Guardrail, GuardrailKind, List } from "../types.ts";

const kinds = [
  ["pii", "PII"],
  ["prompt_injection", "Prompt injection"],
  ["content_safety", "Content safety"],
] as const;
const stages = [
  ["input", "Input (before the provider)"],
  ["output", "Output (answers, streamed or not)"],
] as const;
const actions = [
  ["block", "Refuse the call"],
  ["redact", "Replace them with placeholders"],
] as const;
const failureModes = [
  ["fail_open", "Let the request through"],
  ["fail_closed", "Block the request"],
] as const;

interface Draft {
  kind: GuardrailKind;
  stage: Guardrail["stage"];
  enabled: boolean;
  onError: Guardrail["onError"];
  action: Guardrail["action"];
  piiEntityTypes: string;
  injectionThreshold: string;
  /** "category=score" pairs, comma-separated. */
  contentThresholds: string;
}

function draftOf(g: Guardrail | undefined): Draft {
  if (!g) return { kind: "pii", stage: "input", enabled: true, onError: "fail_closed", action: "block", piiEntityTypes: "", injectionThreshold: "", contentThresholds: "" };
  return {
    kind: g.kind,
    stage: g.stage,
    enabled: g.enabled,
    onError: g.onError,
    action: g.action,
    piiEntityTypes: g.piiEntityTypes.join(", "),
    injectionThreshold: g.injectionThreshold === null ? "" : String(g.injectionThreshold),
    contentThresholds: Object.entries(g.contentThresholds).map(([category, score]) => `${category}=${score}`).join(", "),
  };
}

/** The request body: the settings of the guardrail's kind; empty ones left to the server's defaults. */
function bodyOf(draft: Draft, creating: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { enabled: draft.enabled, onError: draft.onError };
  if (creating) Object.assign(body, { kind: draft.kind, stage: draft.stage });
  if (draft.kind === "pii") {
    body.piiEntityTypes = draft.piiEntityTypes.split(",").map((t) => t.trim()).filter(Boolean);
    body.action = draft.action;
  }
  if (draft.kind === "prompt_injection" && draft.injectionThreshold.trim() !== "") body.injectionThreshold = Number(draft.injectionThreshold);
  if (draft.kind === "content_safety") {
    const pairs = draft.contentThresholds.split(",").map((pair) => pair.split("=").map((part) => part.trim())).filter((pair) => pair[0]);
    body.contentThresholds = Object.fromEntries(pairs.map(([category, score]) => [category, Number(score)]));
  }
  return body;
}

function settingsText(g: Guardrail): string {
  if (g.kind === "pii") {
    const types = g.piiEntityTypes.length ? g.piiEntityTypes.join(", ") : "the default entity types";
    return g.action === "redact" ? `redacts ${types}` : types;
  }
  if (g.kind === "prompt_injection") return g.injectionThreshold === null ? "default threshold" : `blocks from ${formatNumber(g.injectionThreshold)}`;
  const entries = Object.entries(g.contentThresholds);
  return entries.length ? entries.map(([category, score]) => `${category} ≥ ${formatNumber(score)}`).join(", ") : "default thresholds";
}

/** Guardrails: read by every role, changed by admins. Plug-in detectors are set through the API or warden apply. */
export function GuardrailsPage() {
  usePageTitle("Guardrails");
  const admin = mayAdminister(useCaller());
  const guardrails = useLoad(() => get<List<Guardrail>>("/v1/gateway/guardrails"), []);
  const [editing, setEditing] = useState<string | "new" | null>(null);
  const remove = useAction();
  const saved = () => {
    setEditing(null);
    guardrails.reload();
  };
  const drop = (g: Guardrail) => {
    if (!confirmed(`Delete the ${g.kind} guardrail on ${g.stage}?`)) return;
    void remove.run(async () => {
      await call("DELETE", `/v1/gateway/guardrails/${g.id}`);
      guardrails.reload();
    });
  };
  return (
    <>
      <h1>Guardrails</h1>
      <p class="lead">Detectors that run in the gateway on the caller's text and on answers (docs/guardrails.md).</p>
      {admin && editing !== "new" ? (
        <button type="button" class="primary" onClick={() => setEditing("new")}>
          Add guardrail
        </button>
      ) : null}
      {editing === "new" ? <GuardrailForm onSaved={saved} onCancel={() => setEditing(null)} /> : null}
      <ErrorNotice error={guardrails.error ?? remove.error} />
      {!guardrails.data ? (
        guardrails.loading ? <Loading /> : null
      ) : guardrails.data.items.length === 0 ? (
        <Empty>No guardrail.</Empty>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Kind</th>
                <th scope="col">Stage</th>
                <th scope="col">State</th>
                <th scope="col">Settings</th>
                <th scope="col">When a detector fails</th>
                {admin ? (
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {guardrails.data.items.map((g) =>
                editing === g.id ? (
                  <tr key={g.id}>
                    <td colSpan={6}>
                      <GuardrailForm guardrail={g} onSaved={saved} onCancel={() => setEditing(null)} />
                    </td>
                  </tr>
                ) : (
                  <tr key={g.id}>
                    <th scope="row">{kinds.find(([k]) => k === g.kind)?.[1]}</th>
                    <td>{g.stage}</td>
                    <td>{g.enabled ? <span class="status status-passing">enabled</span> : <span class="status status-skipped">disabled</span>}</td>
                    <td>{settingsText(g)}</td>
                    <td>{failureModes.find(([m]) => m === g.onError)?.[1]}</td>
                    {admin ? (
                      <td class="row-actions">
                        <button type="button" class="small-button" onClick={() => setEditing(g.id)}>
                          Edit<span class="visually-hidden"> {g.kind} on {g.stage}</span>
                        </button>
                        <button type="button" class="small-button danger" onClick={() => drop(g)}>
                          Delete<span class="visually-hidden"> {g.kind} on {g.stage}</span>
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

function GuardrailForm(props: { guardrail?: Guardrail; onSaved(): void; onCancel(): void }) {
  const creating = !props.guardrail;
  const [draft, setDraft] = useState<Draft>(() => draftOf(props.guardrail));
  const save = useAction();
  const set = (changes: Partial<Draft>) => setDraft({ ...draft, ...changes });
  const submit = async (event: Event) => {
    event.preventDefault();
    const ok = await save.run(() =>
      creating ? call("POST", "/v1/gateway/guardrails", { body: bodyOf(draft, true) }) : call("PATCH", `/v1/gateway/guardrails/${props.guardrail!.id}`, { body: bodyOf(draft, false) }),
    );
    if (ok) props.onSaved();
  };
  return (
    <form class="card inline-form" onSubmit={submit} aria-label={creating ? "New guardrail" : "Edit guardrail"}>
      <h2>{creating ? "New guardrail" : `Edit the ${draft.kind} guardrail`}</h2>
      <div class="grid-fields">
        {creating ? <SelectField label="Kind" value={draft.kind} options={kinds} onChange={(kind) => set({ kind })} /> : null}
        {creating ? <SelectField label="Stage" value={draft.stage} options={stages} onChange={(stage) => set({ stage })} /> : null}
        <SelectField label="When a detector fails" value={draft.onError} options={failureModes} onChange={(onError) => set({ onError })} />
        {draft.kind === "pii" ? (
          <TextField label="Entity types" value={draft.piiEntityTypes} onInput={(piiEntityTypes) => set({ piiEntityTypes })} placeholder="CREDIT_CARD, US_SSN" hint="Comma-separated Presidio names." />
        ) : null}
        {draft.kind === "pii" ? <SelectField label="When one is found" value={draft.action} options={actions} onChange={(action) => set({ action })} /> : null}
        {draft.kind === "prompt_injection" ? (
          <NumberField label="Block from score" value={draft.injectionThreshold} onInput={(injectionThreshold) => set({ injectionThreshold })} min={0} max={1} hint="Between 0 and 1." />
        ) : null}
        {draft.kind === "content_safety" ? (
          <TextField label="Thresholds by category" value={draft.contentThresholds} onInput={(contentThresholds) => set({ contentThresholds })} placeholder="violence=0.5, hate=0.4" hint="category=score pairs, comma-separated." />
        ) : null}
      </div>
      <CheckField label="Enabled" checked={draft.enabled} onChange={(enabled) => set({ enabled })} />
      <ErrorNotice error={save.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={save.busy}>
          {creating ? "Add guardrail" : "Save"}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
