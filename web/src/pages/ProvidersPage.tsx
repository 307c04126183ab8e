import { useState } from "preact/hooks";
import { call, get } from "../api.ts";
import { useCaller } from "../caller.ts";
import { confirmed } from "../components/Confirmed.ts";
import { NumberField, SelectField, TextField } from "../components/fields.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { formatInteger, formatMs } from "../format.ts";
import { useAction, useLoad } from "../hooks.ts";
import { mayAdminister } from "../session.ts";
import { usePageTitle } from "../title.ts";
import type { List, Provider, ProviderKind } from "../types.ts";

const kinds = [
  ["anthropic", "Anthropic"],
  ["openai", "OpenAI"],
  ["azure_openai", "Azure OpenAI"],
  ["openai_compatible", "OpenAI-compatible (vLLM, Ollama, TGI)"],
] as const;

interface Draft {
  name: string;
  kind: ProviderKind;
  baseUrl: string;
  apiKey: string;
  apiVersion: string;
  maxInFlight: string;
  connectTimeoutMs: string;
  headersTimeoutMs: string;
  bodyTimeoutMs: string;
}

const blank: Draft = { name: "", kind: "anthropic", baseUrl: "", apiKey: "", apiVersion: "", maxInFlight: "", connectTimeoutMs: "", headersTimeoutMs: "", bodyTimeoutMs: "" };

function draftOf(p: Provider): Draft {
  return {
    name: p.name,
    kind: p.kind,
    baseUrl: p.baseUrl,
    apiKey: "",
    apiVersion: p.apiVersion ?? "",
    maxInFlight: String(p.maxInFlight),
    connectTimeoutMs: String(p.connectTimeoutMs),
    headersTimeoutMs: String(p.headersTimeoutMs),
    bodyTimeoutMs: String(p.bodyTimeoutMs),
  };
}

/** The request body of a draft: numbers as numbers, and what was left empty left out (an API key left empty is kept). */
function bodyOf(draft: Draft, creating: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { name: draft.name.trim(), baseUrl: draft.baseUrl.trim() };
  if (creating) body.kind = draft.kind;
  if (draft.apiKey !== "") body.apiKey = draft.apiKey;
  if (draft.kind === "azure_openai" && draft.apiVersion.trim() !== "") body.apiVersion = draft.apiVersion.trim();
  for (const name of ["maxInFlight", "connectTimeoutMs", "headersTimeoutMs", "bodyTimeoutMs"] as const) {
    if (draft[name].trim() !== "") body[name] = Number(draft[name]);
  }
  return body;
}

/** Model providers: read by every role, added, changed and removed by admins. API keys are write-only. */
export function ProvidersPage() {
  usePageTitle("Providers");
  const admin = mayAdminister(useCaller());
  const providers = useLoad(() => get<List<Provider>>("/v1/gateway/providers"), []);
  const [editing, setEditing] = useState<string | "new" | null>(null);
  const remove = useAction();
  const drop = (p: Provider) => {
    if (!confirmed(`Delete the provider ${p.name}? Routing rules that name it will skip it.`)) return;
    void remove.run(async () => {
      await call("DELETE", `/v1/gateway/providers/${p.id}`);
      providers.reload();
    });
  };
  const saved = () => {
    setEditing(null);
    providers.reload();
  };
  return (
    <>
      <h1>Providers</h1>
      {admin && editing !== "new" ? (
        <button type="button" class="primary" onClick={() => setEditing("new")}>
          Add provider
        </button>
      ) : null}
      {editing === "new" ? <ProviderForm onSaved={saved} onCancel={() => setEditing(null)} /> : null}
      <ErrorNotice error={providers.error ?? remove.error} />
      {!providers.data ? (
        providers.loading ? <Loading /> : null
      ) : providers.data.items.length === 0 ? (
        <Empty>No provider yet.</Empty>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Base URL</th>
                <th scope="col">API key</th>
                <th scope="col" class="num">In flight, at most</th>
                <th scope="col" class="num">Timeouts (connect, headers, body)</th>
                {admin ? (
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {providers.data.items.map((p) =>
                editing === p.id ? (
                  <tr key={p.id}>
                    <td colSpan={7}>
                      <ProviderForm provider={p} onSaved={saved} onCancel={() => setEditing(null)} />
                    </td>
                  </tr>
                ) : (
                  <tr key={p.id}>
                    <th scope="row">{p.name}</th>
                    <td>{kinds.find(([k]) => k === p.kind)?.[1] ?? p.kind}</td>
                    <td class="cell" title={p.baseUrl}>
                      {p.baseUrl}
                    </td>
                    <td>{p.hasApiKey ? "set" : "none"}</td>
                    <td class="num">{formatInteger(p.maxInFlight)}</td>
                    <td class="num">
                      {formatMs(p.connectTimeoutMs)}, {formatMs(p.headersTimeoutMs)}, {formatMs(p.bodyTimeoutMs)}
                    </td>
                    {admin ? (
                      <td class="row-actions">
                        <button type="button" class="small-button" onClick={() => setEditing(p.id)}>
                          Edit<span class="visually-hidden"> {p.name}</span>
                        </button>
                        <button type="button" class="small-button danger" onClick={() => drop(p)}>
                          Delete<span class="visually-hidden"> {p.name}</span>
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

function ProviderForm(props: { provider?: Provider; onSaved(): void; onCancel(): void }) {
  const creating = !props.provider;
  const [draft, setDraft] = useState<Draft>(props.provider ? draftOf(props.provider) : blank);
  const save = useAction();
  const set = (changes: Partial<Draft>) => setDraft({ ...draft, ...changes });
  const submit = async (event: Event) => {
    event.preventDefault();
    const ok = await save.run(() =>
      creating ? call("POST", "/v1/gateway/providers", { body: bodyOf(draft, true) }) : call("PATCH", `/v1/gateway/providers/${props.provider!.id}`, { body: bodyOf(draft, false) }),
    );
    if (ok) props.onSaved();
  };
  return (
    <form class="card inline-form" onSubmit={submit} aria-label={creating ? "New provider" : `Edit ${props.provider!.name}`}>
      <h2>{creating ? "New provider" : `Edit ${props.provider!.name}`}</h2>
      <div class="grid-fields">
        <TextField label="Name" value={draft.name} onInput={(name) => set({ name })} required hint="Routing rules name their targets by it." />
        {creating ? <SelectField label="Kind" value={draft.kind} options={kinds} onChange={(kind) => set({ kind })} /> : null}
        <TextField label="Base URL" type="url" value={draft.baseUrl} onInput={(baseUrl) => set({ baseUrl })} required placeholder="https://api.anthropic.com" />
        <TextField
          label="API key"
          type="password"
          value={draft.apiKey}
          onInput={(apiKey) => set({ apiKey })}
          hint={creating ? "Stored encrypted, never shown again." : "Leave empty to keep the stored key."}
        />
        {draft.kind === "azure_openai" ? <TextField label="API version" value={draft.apiVersion} onInput={(apiVersion) => set({ apiVersion })} placeholder="2025-04-01-preview" /> : null}
        <NumberField label="In flight, at most" value={draft.maxInFlight} onInput={(maxInFlight) => set({ maxInFlight })} min={1} step={1} hint="Default 256." />
        <NumberField label="Connect timeout (ms)" value={draft.connectTimeoutMs} onInput={(connectTimeoutMs) => set({ connectTimeoutMs })} min={1} step={1} />
        <NumberField label="Headers timeout (ms)" value={draft.headersTimeoutMs} onInput={(headersTimeoutMs) => set({ headersTimeoutMs })} min={1} step={1} />
        <NumberField label="Body timeout (ms)" value={draft.bodyTimeoutMs} onInput={(bodyTimeoutMs) => set({ bodyTimeoutMs })} min={1} step={1} />
      </div>
      <ErrorNotice error={save.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={save.busy}>
          {creating ? "Add provider" : "Save"}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
