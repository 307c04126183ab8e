import { useEffect, useRef, useState } from "preact/hooks";
import { call, withQuery } from "../api.ts";
import { SelectField, TextField } from "../components/fields.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { Pager } from "../components/Pager.tsx";
import { Status } from "../components/Status.tsx";
import { cellText, formatDate, formatWindow } from "../format.ts";
import { useLoad } from "../hooks.ts";
import type { List, Row, TestResult } from "../types.ts";

const PER_PAGE = 20;
/** Columns shown at most; the rest of a row is in its "All columns" cell. */
const MAX_COLUMNS = 6;

const operators = [
  ["is", "is"],
  ["!=", "is not"],
  [">", ">"],
  [">=", "≥"],
  ["<", "<"],
  ["<=", "≤"],
] as const;
type Operator = (typeof operators)[number][0];

interface Filter {
  search: string;
  column: string;
  operator: Operator;
  value: string;
}

const noFilter: Filter = { search: "", column: "", operator: "is", value: "" };

/**
 * The rows of one window of a pipeline: POST /v1/inference-pipelines/{id}/rows with the window as
 * a filter on openlayer_timestamp, and the person's own filters (text search, one column), paged.
 */
export function WindowRows(props: { pipelineId: string; result: TestResult; onClose(): void }) {
  const [draft, setDraft] = useState<Filter>(noFilter);
  const [applied, setApplied] = useState<Filter>(noFilter);
  const [page, setPage] = useState(1);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const { result } = props;
  const rows = useLoad(
    () => call<List<Row>>("POST", withQuery(`/v1/inference-pipelines/${props.pipelineId}/rows`, { page, perPage: PER_PAGE }), { body: rowFilter(result, applied) }),
    [props.pipelineId, result.id, applied, page],
  );
  const submit = (event: Event) => {
    event.preventDefault();
    setApplied(draft);
    setPage(1);
  };
  const items = rows.data?.body.items ?? [];
  const columns = columnsOf(items);
  return (
    <section class="rows" aria-labelledby="rows-title" data-testid="window-rows">
      <div class="rows-head">
        <h4 id="rows-title" ref={heading} tabIndex={-1}>
          Rows of {formatWindow(result.dateDataStarts, result.dateDataEnds)} <Status value={result.status} />
        </h4>
        <button type="button" class="link-button" onClick={props.onClose}>
          Close
        </button>
      </div>
      {result.statusMessage ? <p class="muted">{result.statusMessage}</p> : null}
      <form class="filters" onSubmit={submit} aria-label="Filter the window's rows">
        <TextField label="Text contains" type="search" value={draft.search} onInput={(search) => setDraft({ ...draft, search })} />
        <TextField label="Column" value={draft.column} onInput={(column) => setDraft({ ...draft, column })} placeholder="e.g. topic" />
        <SelectField label="Operator" value={draft.operator} options={operators} onChange={(operator) => setDraft({ ...draft, operator })} />
        <TextField label="Value" value={draft.value} onInput={(value) => setDraft({ ...draft, value })} />
        <button type="submit">Filter</button>
      </form>
      <ErrorNotice error={rows.error} />
      {!rows.data ? (
        rows.loading ? <Loading /> : null
      ) : items.length === 0 ? (
        <Empty>No row in this window matches.</Empty>
      ) : (
        <div class="table-wrap">
          <table class="data">
            <thead>
              <tr>
                <th scope="col">Inference ID</th>
                <th scope="col">Time</th>
                {columns.map((column) => (
                  <th key={column} scope="col">
                    {column}
                  </th>
                ))}
                <th scope="col">All columns</th>
              </tr>
            </thead>
            <tbody>
              {items.map((row) => (
                <tr key={String(row.openlayer_row_id)}>
                  <th scope="row">
                    <code>{cellText(row.openlayer_inference_id)}</code>
                  </th>
                  <td class="nowrap">{formatDate(new Date(Number(row.openlayer_timestamp) * 1000).toISOString())}</td>
                  {columns.map((column) => (
                    <td key={column} class="cell" title={cellText(row[column])}>
                      {cellText(row[column])}
                    </td>
                  ))}
                  <td>
                    <details>
                      <summary>JSON</summary>
                      <pre>{JSON.stringify(row, null, 2)}</pre>
                    </details>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Rows" page={page} hasNext={rows.data?.hasNext ?? false} onPage={setPage} />
    </section>
  );
}

/** The rows API's filter body: the window, then the person's filters. */
function rowFilter(result: TestResult, filter: Filter) {
  const start = Date.parse(result.dateDataStarts!) / 1000;
  const end = Date.parse(result.dateDataEnds!) / 1000;
  const columnFilters: { measurement: string; operator: string; value: unknown }[] = [
    { measurement: "openlayer_timestamp", operator: ">=", value: start },
    { measurement: "openlayer_timestamp", operator: "<", value: end },
  ];
  if (filter.column.trim() !== "") {
    columnFilters.push({ measurement: filter.column.trim(), operator: filter.operator, value: filterValue(filter.value, filter.operator) });
  }
  return { columnFilters, searchQueryAnd: filter.search.trim() === "" ? [] : [filter.search.trim()] };
}

/** A number when it reads as one (the API compares numbers with every operator, strings with is and != only). */
function filterValue(text: string, operator: Operator): string | number | boolean | null {
  const trimmed = text.trim();
  if (trimmed === "null") return null;
  if (trimmed === "true" || trimmed === "false") return trimmed === "true";
  const number = Number(trimmed);
  if (trimmed !== "" && Number.isFinite(number)) return number;
  return operator === "is" || operator === "!=" ? text : Number.NaN;
}

/** The columns the rows were sent with (the canonical openlayer_* ones left out), the commonest first. */
function columnsOf(rows: Row[]): string[] {
  const counts = new Map<string, number>();
  for (const row of rows) {
    for (const key of Object.keys(row)) if (!key.startsWith("openlayer_")) counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, MAX_COLUMNS).map(([key]) => key);
}
