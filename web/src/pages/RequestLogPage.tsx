import { useState } from "preact/hooks";
import { call, get, withQuery } from "../api.ts";
import { CheckField, SelectField, TextField } from "../components/fields.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { Pager } from "../components/Pager.tsx";
import { formatDate, formatInteger, formatMs, formatUsd } from "../format.ts";
import { useLoad } from "../hooks.ts";
import { setQuery, useLocation } from "../router.ts";
import { usePageTitle } from "../title.ts";
import type { GatewayKey, List, RequestLogEntry } from "../types.ts";

const PER_PAGE = 50;

const periods = [
  ["1h", "Last hour"],
  ["24h", "Last 24 hours"],
  ["7d", "Last 7 days"],
  ["30d", "Last 30 days"],
] as const;
const periodMs: Record<string, number> = { "1h": 3_600_000, "24h": 86_400_000, "7d": 7 * 86_400_000, "30d": 30 * 86_400_000 };

/** The filters of GET /v1/gateway/request-log that the page offers, as its query holds them. */
const textFilters = [
  ["model", "Model"],
  ["provider", "Provider"],
  ["endpoint", "Endpoint"],
  ["status", "HTTP status"],
  ["errorType", "Error type"],
  ["requestId", "Request ID"],
] as const;
type FilterName = (typeof textFilters)[number][0] | "keyId" | "period" | "superseded";
type Filters = Record<FilterName, string>;

function filtersOf(query: URLSearchParams): Filters {
  const read = (name: FilterName) => query.get(name) ?? "";
  return {
    model: read("model"),
    provider: read("provider"),
    endpoint: read("endpoint"),
    status: read("status"),
    errorType: read("errorType"),
    requestId: read("requestId"),
    keyId: read("keyId"),
    period: read("period") || "24h",
    superseded: read("superseded"),
  };
}

/** The gateway's request log, newest first, filtered; the filters live in the URL, so a view can be shared. */
export function RequestLogPage() {
  usePageTitle("Request log");
  const here = useLocation();
  const applied = filtersOf(here.query);
  const appliedText = here.query.toString();
  const [draft, setDraft] = useState<Filters>(applied);
  const [page, setPage] = useState(1);
  // Pages are numbered within [start, end): the end stays put while the person pages through.
  const [end, setEnd] = useState(() => new Date());
  const keys = useLoad(() => get<List<GatewayKey>>("/v1/gateway/keys"), []);
  const log = useLoad(() => {
    const until = end.getTime();
    return call<List<RequestLogEntry>>(
      "GET",
      withQuery("/v1/gateway/request-log", {
        page,
        perPage: PER_PAGE,
        startTime: new Date(until - (periodMs[applied.period] ?? periodMs["24h"]!)).toISOString(),
        endTime: new Date(until + 1).toISOString(),
        model: applied.model,
        provider: applied.provider,
        endpoint: applied.endpoint,
        status: applied.status,
        errorType: applied.errorType,
        requestId: applied.requestId,
        keyId: applied.keyId,
        superseded: applied.superseded === "true" ? true : undefined,
      }),
    );
  }, [appliedText, page, end]);

  const submit = (event: Event) => {
    event.preventDefault();
    setQuery({ ...draft, superseded: draft.superseded === "true" ? "true" : undefined, period: draft.period === "24h" ? undefined : draft.period });
    setPage(1);
    setEnd(new Date());
  };
  const clear = () => {
    setDraft(filtersOf(new URLSearchParams()));
    setQuery(Object.fromEntries([...here.query.keys()].map((name) => [name, undefined])));
    setPage(1);
    setEnd(new Date());
  };
  const keyOptions: [string, string][] = [["", "Every key"], ...(keys.data?.items ?? []).map((key): [string, string] => [key.id, key.name ?? key.keyPrefix])];

  return (
    <>
      <h1>Request log</h1>
      <form class="filters" onSubmit={submit} aria-label="Filter the request log">
        <SelectField label="Period" value={draft.period} options={periods} onChange={(period) => setDraft({ ...draft, period })} />
        <SelectField label="Key" value={draft.keyId} options={keyOptions} onChange={(keyId) => setDraft({ ...draft, keyId })} />
        {textFilters.map(([name, label]) => (
          <TextField key={name} label={label} value={draft[name]} onInput={(value) => setDraft({ ...draft, [name]: value })} />
        ))}
        <CheckField label="Superseded attempts only" checked={draft.superseded === "true"} onChange={(on) => setDraft({ ...draft, superseded: on ? "true" : "" })} />
        <div class="actions">
          <button type="submit" class="primary">
            Apply
          </button>
          <button type="button" onClick={clear}>
            Clear
          </button>
          <button type="button" onClick={() => setEnd(new Date())}>
            Refresh
          </button>
        </div>
      </form>
      <ErrorNotice error={log.error} />
      {!log.data ? (
        log.loading ? <Loading /> : null
      ) : log.data.body.items.length === 0 ? (
        <Empty>No request matches.</Empty>
      ) : (
        <div class="table-wrap">
          <table class="data" data-testid="request-log">
            <caption class="visually-hidden">Gateway requests, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Key</th>
                <th scope="col">Endpoint</th>
                <th scope="col">Model</th>
                <th scope="col">Provider</th>
                <th scope="col" class="num">Status</th>
                <th scope="col" class="num">Latency</th>
                <th scope="col" class="num">Tokens in / out</th>
                <th scope="col" class="num">Cost</th>
                <th scope="col">Guardrails</th>
                <th scope="col">Request ID</th>
              </tr>
            </thead>
            <tbody>
              {log.data.body.items.map((entry) => (
                <tr key={String(entry.id)} class={entry.status >= 400 ? "row-error" : undefined}>
                  <td class="nowrap">{formatDate(entry.time)}</td>
                  <td>{entry.keyName ?? entry.keyId ?? "—"}</td>
                  <td>
                    <code>{entry.endpoint}</code>
                  </td>
                  <td>{entry.model ?? "—"}</td>
                  <td>{entry.provider ?? "—"}</td>
                  <td class="num">
                    {entry.status}
                    {entry.errorType ? <div class="muted small">{entry.errorType}</div> : null}
                    {entry.superseded ? <div class="muted small">superseded</div> : null}
                  </td>
                  <td class="num">{formatMs(entry.latencyMs)}</td>
                  <td class="num">
                    {formatInteger(entry.inputTokens)} / {formatInteger(entry.outputTokens)}
                  </td>
                  <td class="num">{formatUsd(entry.costUsd)}</td>
                  <td>
                    {entry.guardrailVerdict ?? "—"}
                    {entry.redactions.length > 0 ? (
                      <div class="hint">redacted: {entry.redactions.map((r) => `${r.count} ${r.entityType} (${r.stage})`).join(", ")}</div>
                    ) : null}
                  </td>
                  <td class="cell cell-id" title={entry.requestId}>
                    <code>{entry.requestId}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Request log" page={page} hasNext={log.data?.hasNext ?? false} onPage={setPage} />
    </>
  );
}
