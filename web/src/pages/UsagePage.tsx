import { get, withQuery } from "../api.ts";
import { StackedBars, type Series } from "../charts/StackedBars.tsx";
import { SelectField } from "../components/fields.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { formatInteger, formatUsd } from "../format.ts";
import { useLoad } from "../hooks.ts";
import { setQuery, useLocation } from "../router.ts";
import { usePageTitle } from "../title.ts";
import type { List, UsageRow } from "../types.ts";

const ranges = [
  ["24h", "Last 24 hours"],
  ["7d", "Last 7 days"],
  ["30d", "Last 30 days"],
] as const;
type Range = (typeof ranges)[number][0];

const groupings = [
  ["key", "Key"],
  ["model", "Model"],
  ["user", "User"],
  ["group", "Group"],
] as const;
type Grouping = (typeof groupings)[number][0];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Each range's length and bucket: hours for a day, days beyond. */
const rangeSpec: Record<Range, { ms: number; bucket: "hour" | "day" }> = {
  "24h": { ms: DAY, bucket: "hour" },
  "7d": { ms: 7 * DAY, bucket: "day" },
  "30d": { ms: 30 * DAY, bucket: "day" },
};
/** Series charted by name; the rest are summed as "Other". */
const TOP = 7;

interface Usage {
  buckets: Date[];
  rows: UsageRow[];
}

/** Gateway usage over time, from GET /v1/gateway/usage: tokens and cost per bucket, by key, model, user or group. */
export function UsagePage() {
  usePageTitle("Gateway usage");
  const here = useLocation();
  const range = (ranges.find(([r]) => r === here.query.get("range"))?.[0] ?? "24h") as Range;
  const groupBy = (groupings.find(([g]) => g === here.query.get("by"))?.[0] ?? "key") as Grouping;
  const usage = useLoad(() => loadUsage(range, groupBy), [range, groupBy]);
  const bucketLabel = (date: Date) =>
    rangeSpec[range].bucket === "hour"
      ? date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" })
      : date.toLocaleDateString(undefined, { month: "short", day: "numeric" });
  const subjects = usage.data ? totalsBySubject(usage.data.rows) : [];
  return (
    <>
      <h1>Gateway usage</h1>
      <div class="filters">
        <SelectField label="Period" value={range} options={ranges} onChange={(value) => setQuery({ range: value })} />
        <SelectField label="By" value={groupBy} options={groupings} onChange={(value) => setQuery({ by: value })} />
      </div>
      <ErrorNotice error={usage.error} />
      {!usage.data ? (
        usage.loading ? <Loading /> : null
      ) : usage.data.rows.length === 0 ? (
        <Empty>No gateway request in this period.</Empty>
      ) : (
        <>
          <section aria-labelledby="tokens-title">
            <h2 id="tokens-title">Tokens</h2>
            <StackedBars
              title={`Tokens per ${rangeSpec[range].bucket}, by ${groupBy}`}
              buckets={usage.data.buckets}
              series={seriesOf(usage.data, subjects, (row) => row.totalTokens)}
              format={formatInteger}
              bucketLabel={bucketLabel}
            />
          </section>
          <section aria-labelledby="cost-title">
            <h2 id="cost-title">Cost</h2>
            <StackedBars
              title={`Cost in US dollars per ${rangeSpec[range].bucket}, by ${groupBy}`}
              buckets={usage.data.buckets}
              series={seriesOf(usage.data, subjects, (row) => row.costUsd)}
              format={formatUsd}
              bucketLabel={bucketLabel}
            />
          </section>
          <section aria-labelledby="totals-title">
            <h2 id="totals-title">Totals</h2>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">{groupings.find(([g]) => g === groupBy)![1]}</th>
                    <th scope="col" class="num">Requests</th>
                    <th scope="col" class="num">Input tokens</th>
                    <th scope="col" class="num">Output tokens</th>
                    <th scope="col" class="num">Cost</th>
                    <th scope="col" class="num">Unpriced requests</th>
                  </tr>
                </thead>
                <tbody>
                  {subjects.map((s) => (
                    <tr key={s.label}>
                      <th scope="row">{s.label}</th>
                      <td class="num">{formatInteger(s.requests)}</td>
                      <td class="num">{formatInteger(s.inputTokens)}</td>
                      <td class="num">{formatInteger(s.outputTokens)}</td>
                      <td class="num">{formatUsd(s.costUsd)}</td>
                      <td class="num">{formatInteger(s.unpriced)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </section>
        </>
      )}
    </>
  );
}

async function loadUsage(range: Range, groupBy: Grouping): Promise<Usage> {
  const { ms, bucket } = rangeSpec[range];
  const step = bucket === "hour" ? HOUR : DAY;
  // Whole buckets, the current one included: the range ends at the end of this hour or day (UTC).
  const end = Math.ceil((Date.now() + 1) / step) * step;
  const start = end - Math.ceil(ms / step) * step;
  const answer = await get<List<UsageRow>>(
    withQuery("/v1/gateway/usage", { startTime: new Date(start).toISOString(), endTime: new Date(end).toISOString(), groupBy, bucket }),
  );
  const buckets: Date[] = [];
  for (let t = start; t < end; t += step) buckets.push(new Date(t));
  return { buckets, rows: answer.items };
}

interface SubjectTotal {
  key: string | null;
  label: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  costUsd: number;
  unpriced: number;
}

/** One line per key (or model…), most tokens first. */
function totalsBySubject(rows: UsageRow[]): SubjectTotal[] {
  const totals = new Map<string | null, SubjectTotal>();
  for (const row of rows) {
    const total = totals.get(row.subject) ?? {
      key: row.subject,
      label: row.name ?? row.subject ?? "(none)",
      requests: 0,
      inputTokens: 0,
      outputTokens: 0,
      totalTokens: 0,
      costUsd: 0,
      unpriced: 0,
    };
    total.requests += row.requests;
    total.inputTokens += row.inputTokens;
    total.outputTokens += row.outputTokens;
    total.totalTokens += row.totalTokens;
    total.costUsd += row.costUsd;
    total.unpriced += row.unpricedRequests;
    totals.set(row.subject, total);
  }
  return [...totals.values()].sort((a, b) => b.totalTokens - a.totalTokens || b.requests - a.requests);
}

/** The top subjects as series, the others summed as "Other", one value per bucket. */
function seriesOf(usage: Usage, subjects: SubjectTotal[], value: (row: UsageRow) => number): Series[] {
  const top = subjects.slice(0, TOP);
  const index = new Map(usage.buckets.map((bucket, i) => [bucket.getTime(), i]));
  const series: Series[] = top.map((s) => ({ name: s.label, values: usage.buckets.map(() => 0) }));
  const other: Series = { name: "Other", values: usage.buckets.map(() => 0) };
  const position = new Map(top.map((s, i) => [s.key, i]));
  for (const row of usage.rows) {
    const i = row.bucketStart ? index.get(Date.parse(row.bucketStart)) : undefined;
    if (i === undefined) continue;
    const target = position.has(row.subject) ? series[position.get(row.subject)!]! : other;
    target.values[i] = (target.values[i] ?? 0) + value(row);
  }
  return other.values.some((v) => v > 0) ? [...series, other] : series;
}
