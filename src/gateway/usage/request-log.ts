import type pg from "pg";
import type { DatabaseDeadlines } from "../../db/deadlines.ts";
import { arrayLiteral, type ArrayElement } from "../../db/array-literal.ts";
import { createPool } from "../../db/pools.ts";
import type { Logger } from "../../platform/logger.ts";
import { BatchWriter, isDataError } from "./batch-writer.ts";

/** How one gateway request went: what the request log and a traffic row both record. */
export interface CallOutcome {
  requestId: string;
  /** When the request started. */
  time: Date;
  endpoint: string;
  model: string | null;
  provider: string | null;
  status: number;
  errorType: string | null;
  latencyMs: number;
  ttfbMs: number | null;
  guardrailVerdict: string | null;
}

/** What redacting PII guardrails replaced, by stage and entity type: counts, never values. */
export type Redactions = Partial<Record<"input" | "output", Record<string, number>>>;

export interface RequestLogEntry extends CallOutcome {
  workspaceId: string | null;
  keyId: string | null;
  userId: string | null;
  groupIds: string[];
  inputTokens: number;
  outputTokens: number;
  /** Of the input, tokens read from the provider's prompt cache; 0 when it said none (or nothing). */
  cachedInputTokens?: number;
  /** What the call cost, in US dollars as an exact decimal (price-book.ts, dollarsText); null: no price known, or nothing was used. */
  costUsd?: string | null;
  /** The provider reported nothing (an abandoned stream): the tokens are an estimate. */
  tokensEstimated: boolean;
  /** Set when a PII guardrail redacted something. */
  redactions?: Redactions | null;
  /** A failed attempt after which the call moved to its rule's next target; its final attempt has its own entry. */
  superseded?: boolean;
}

export interface RequestLogOptions {
  databaseUrl: string;
  deadlines: DatabaseDeadlines;
  logger: Logger;
  /** Rows older than this are deleted. */
  retentionDays: number;
  flushIntervalMs?: number;
  batchSize?: number;
  /** Entries held while the database is away; past it, the oldest are dropped, and counted. */
  maxBuffered?: number;
}

/** Columns and their array types; group_ids (an array itself) travels as text and is cast back. */
const columns: [string, string][] = [
  ["request_id", "text"], ["time", "bigint"], ["workspace_id", "uuid"], ["key_id", "uuid"], ["user_id", "uuid"],
  ["group_ids", "text"], ["endpoint", "text"], ["model", "text"], ["provider", "text"], ["status", "smallint"],
  ["error_type", "text"], ["latency_ms", "integer"], ["ttfb_ms", "integer"], ["input_tokens", "bigint"],
  ["output_tokens", "bigint"], ["tokens_estimated", "boolean"], ["guardrail_verdict", "text"],
  ["superseded", "boolean"], ["cached_input_tokens", "bigint"], ["cost_usd", "numeric"],
  ["redactions", "jsonb"],
];

/**
 * How a column is read from its unnested array, where that is not the array's element itself. The
 * time travels as epoch milliseconds: as text, each row's Date went through toISOString, which V8
 * formats with printf, 7,300 instructions a row, 2 % of a whole gateway call's (docs/performance.md,
 * "Instructions a call, whole gateways").
 */
const selected: Record<string, string> = {
  group_ids: "group_ids::uuid[]",
  time: "timestamptz 'epoch' + time * interval '1 millisecond'",
};

const insertSql = `insert into gateway_request_log (${columns.map(([name]) => name).join(", ")})
  select ${columns.map(([name]) => selected[name] ?? name).join(", ")}
    from unnest(${columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ")})
      as batch(${columns.map(([name]) => name).join(", ")})`;

/** Text PostgreSQL will store: no NUL characters, at most `max` characters. */
function fit(value: string | null, max: number): string | null {
  if (value === null) return null;
  // Looked for first: replaceAll, even with nothing to replace, costs five times as much (it
  // looks its search value up for a Symbol.replace method first), three times a request.
  return (value.includes("\u0000") ? value.replaceAll("\u0000", "") : value).slice(0, max);
}

/** Rows deleted per retention statement, and statements per hourly run (what is left waits an hour). */
const retentionBatch = 5_000;
const maxRetentionBatches = 2_000;
// Ids grow with time, so the oldest rows are found by the primary key, from its start.
const expireSql = `
  delete from gateway_request_log where id in (
    select id from gateway_request_log where time < now() - make_interval(days => $1) order by id limit $2
  )`;

const SMALLINT_MAX = 32_767;
const INTEGER_MAX = 2_147_483_647;

/** A whole number from 0 to `max` that the column takes: NaN is 0, fractions are cut, the rest clamped. */
function clamp(value: number, max: number): number {
  return Number.isFinite(value) ? Math.min(max, Math.max(0, Math.floor(value))) : value > 0 ? max : 0;
}

/** A row's values, in the order of `columns`. */
function rowOf(e: RequestLogEntry): ArrayElement[] {
  return [
    e.requestId, e.time.getTime(), e.workspaceId, e.keyId, e.userId, `{${e.groupIds.join(",")}}`, e.endpoint, e.model, e.provider,
    e.status, e.errorType, e.latencyMs, e.ttfbMs, e.inputTokens, e.outputTokens, e.tokensEstimated, e.guardrailVerdict,
    e.superseded ?? false, e.cachedInputTokens ?? 0, e.costUsd ?? null, e.redactions ? JSON.stringify(e.redactions) : null,
  ];
}

/**
 * The batch's columns, each one array literal, in one pass over its rows. A `batch.map` per column
 * made 21 closures per write, and V8 optimized them anew every few thousand requests: with
 * `--trace-opt`, 63 of a gateway's 81 optimizing compilations over 20,000 calls at steady state,
 * on its one core.
 */
function columnValues(batch: RequestLogEntry[]): string[] {
  const values = columns.map(() => new Array<ArrayElement>(batch.length));
  for (let i = 0; i < batch.length; i++) {
    const row = rowOf(batch[i]!);
    for (let k = 0; k < row.length; k++) values[k]![i] = row[k];
  }
  return values.map(arrayLiteral);
}

/**
 * The request log, written off the hot path by a BatchWriter (batch-writer.ts): requests append to
 * a buffer, and a timer writes it in batched inserts. A database outage delays rows, and past
 * `maxBuffered` drops the oldest, saying how many in the log; a row the database refuses is found
 * by halving its batch, logged and dropped alone.
 */
export class RequestLog {
  readonly #pool: pg.Pool;
  readonly #options: Required<RequestLogOptions>;
  readonly #writer: BatchWriter<RequestLogEntry>;
  readonly #retentionTimer: NodeJS.Timeout;

  constructor(options: RequestLogOptions) {
    // Small, frequent batches: a large one blocks the event loop for milliseconds while the driver
    // serializes it, which shows in every request's tail latency.
    this.#options = { flushIntervalMs: 100, batchSize: 200, maxBuffered: 100_000, ...options };
    const pool = createPool({
      databaseUrl: options.databaseUrl,
      deadlines: options.deadlines,
      max: 2,
      onIdleError: (err) => options.logger.warn({ err }, "request log connection failed"),
    });
    this.#pool = pool;
    this.#writer = new BatchWriter<RequestLogEntry>({
      // One array per column, unnested: a constant 17 parameters however large the batch.
      write: async (batch) => void (await pool.query(insertSql, columnValues(batch))),
      classify: (err) => (isDataError(err) ? "refused" : "retry"),
      logger: options.logger,
      messages: {
        retry: "request log write failed; will retry",
        refused: "request log row refused by the database; dropped",
        discarded: "request log rows discarded",
        overflow: "request log rows dropped while the database was unavailable",
        lost: "request log rows lost at shutdown: the database did not take them",
      },
      describe: (batch) => ({ row: batch[0] }),
      flushIntervalMs: this.#options.flushIntervalMs,
      batchSize: this.#options.batchSize,
      maxBuffered: this.#options.maxBuffered,
    });
    this.#retentionTimer = setInterval(() => void this.expire(), 3_600_000);
    this.#retentionTimer.unref();
  }

  record(entry: RequestLogEntry): void {
    // The request ID and the model come from callers, the token counts from providers: each is
    // made to fit its column, so that the row is written as far as it can be.
    entry.requestId = fit(entry.requestId, 128) ?? "";
    entry.model = fit(entry.model, 255);
    entry.provider = fit(entry.provider, 64);
    entry.errorType = fit(entry.errorType, 32);
    entry.guardrailVerdict = fit(entry.guardrailVerdict, 255);
    entry.status = clamp(entry.status, SMALLINT_MAX);
    entry.latencyMs = clamp(entry.latencyMs, INTEGER_MAX);
    entry.ttfbMs = entry.ttfbMs === null ? null : clamp(entry.ttfbMs, INTEGER_MAX);
    entry.inputTokens = clamp(entry.inputTokens, Number.MAX_SAFE_INTEGER);
    entry.outputTokens = clamp(entry.outputTokens, Number.MAX_SAFE_INTEGER);
    if (entry.cachedInputTokens !== undefined) entry.cachedInputTokens = clamp(entry.cachedInputTokens, Number.MAX_SAFE_INTEGER);
    this.#writer.add(entry);
  }

  /** Rows in memory, not yet written. */
  get buffered(): number {
    return this.#writer.buffered;
  }

  /** Rows dropped since start: past maxBuffered while the database was away, or refused by it. */
  get dropped(): number {
    return this.#writer.dropped;
  }

  /** Writes what is buffered now, whatever the retry delay; concurrent calls share one write. */
  flush(): Promise<void> {
    return this.#writer.flush();
  }

  async close(): Promise<void> {
    clearInterval(this.#retentionTimer);
    await this.#writer.close();
    await this.#pool.end();
  }

  /**
   * Deletes the rows older than the retention, in batches of the oldest ids: each statement stays
   * well inside the statement timeout however far behind retention is (one delete of a large
   * backlog would be cancelled every hour, and the table would never shrink again).
   */
  async expire(): Promise<void> {
    try {
      for (let batch = 0; batch < maxRetentionBatches; batch++) {
        const { rowCount } = await this.#pool.query(expireSql, [this.#options.retentionDays, retentionBatch]);
        if ((rowCount ?? 0) < retentionBatch) return;
      }
    } catch (err) {
      this.#options.logger.warn({ err }, "request log retention failed");
    }
  }
}
