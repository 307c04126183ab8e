import pg from "pg";
import type { Logger } from "../../platform/logger.ts";

export interface RequestLogEntry {
  requestId: string;
  time: Date;
  workspaceId: string | null;
  keyId: string | null;
  userId: string | null;
  groupIds: string[];
  endpoint: string;
  model: string | null;
  provider: string | null;
  status: number;
  errorType: string | null;
  latencyMs: number;
  ttfbMs: number | null;
  inputTokens: number;
  outputTokens: number;
  /** The provider reported nothing (an abandoned stream): the tokens are an estimate. */
  tokensEstimated: boolean;
  guardrailVerdict: string | null;
}

export interface RequestLogOptions {
  databaseUrl: string;
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
  ["request_id", "text"], ["time", "timestamptz"], ["workspace_id", "uuid"], ["key_id", "uuid"], ["user_id", "uuid"],
  ["group_ids", "text"], ["endpoint", "text"], ["model", "text"], ["provider", "text"], ["status", "smallint"],
  ["error_type", "text"], ["latency_ms", "integer"], ["ttfb_ms", "integer"], ["input_tokens", "integer"],
  ["output_tokens", "integer"], ["tokens_estimated", "boolean"], ["guardrail_verdict", "text"],
];

const insertSql = `insert into gateway_request_log (${columns.map(([name]) => name).join(", ")})
  select ${columns.map(([name]) => (name === "group_ids" ? "group_ids::uuid[]" : name)).join(", ")}
    from unnest(${columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ")})
      as batch(${columns.map(([name]) => name).join(", ")})`;

/** Text PostgreSQL will store: no NUL characters, at most `max` characters. */
function fit(value: string | null, max: number): string | null {
  return value === null ? null : value.replaceAll("\u0000", "").slice(0, max);
}

function columnValues(batch: RequestLogEntry[]): unknown[][] {
  return [
    batch.map((e) => e.requestId), batch.map((e) => e.time), batch.map((e) => e.workspaceId), batch.map((e) => e.keyId),
    batch.map((e) => e.userId), batch.map((e) => `{${e.groupIds.join(",")}}`), batch.map((e) => e.endpoint),
    batch.map((e) => e.model), batch.map((e) => e.provider), batch.map((e) => e.status), batch.map((e) => e.errorType),
    batch.map((e) => e.latencyMs), batch.map((e) => e.ttfbMs), batch.map((e) => e.inputTokens),
    batch.map((e) => e.outputTokens), batch.map((e) => e.tokensEstimated), batch.map((e) => e.guardrailVerdict),
  ];
}

/**
 * The request log, written off the hot path: requests append to a buffer, and a timer writes it
 * in batched inserts. A database outage delays rows, and past `maxBuffered` drops the oldest,
 * saying how many in the log, rather than holding requests up or growing without bound.
 */
export class RequestLog {
  readonly #pool: pg.Pool;
  readonly #options: Required<RequestLogOptions>;
  #buffer: RequestLogEntry[] = [];
  #dropped = 0;
  #flushing: Promise<void> | undefined;
  readonly #flushTimer: NodeJS.Timeout;
  readonly #retentionTimer: NodeJS.Timeout;

  constructor(options: RequestLogOptions) {
    // Small, frequent batches: a large one blocks the event loop for milliseconds while the driver
    // serializes it, which shows in every request's tail latency.
    this.#options = { flushIntervalMs: 100, batchSize: 200, maxBuffered: 100_000, ...options };
    this.#pool = new pg.Pool({ connectionString: options.databaseUrl, max: 2 });
    this.#pool.on("error", (err) => options.logger.warn({ err }, "request log connection failed"));
    this.#flushTimer = setInterval(() => void this.flush(), this.#options.flushIntervalMs);
    this.#flushTimer.unref();
    this.#retentionTimer = setInterval(() => void this.#expire(), 3_600_000);
    this.#retentionTimer.unref();
  }

  record(entry: RequestLogEntry): void {
    if (this.#buffer.length >= this.#options.maxBuffered) {
      this.#buffer.shift();
      this.#dropped += 1;
    }
    // The request ID and the model come from callers: a value the column cannot take would fail
    // its whole batch, again and again.
    entry.requestId = fit(entry.requestId, 128) ?? "";
    entry.model = fit(entry.model, 255);
    entry.guardrailVerdict = fit(entry.guardrailVerdict, 255);
    this.#buffer.push(entry);
  }

  /** Writes what is buffered; concurrent calls share one write. */
  flush(): Promise<void> {
    this.#flushing ??= this.#write().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.#flushTimer);
    clearInterval(this.#retentionTimer);
    await this.flush();
    await this.#pool.end();
  }

  async #write(): Promise<void> {
    while (this.#buffer.length > 0) {
      const batch = this.#buffer.slice(0, this.#options.batchSize);
      // One array per column, unnested: a constant 17 parameters however large the batch.
      const values = columnValues(batch);
      try {
        await this.#pool.query(insertSql, values);
      } catch (err) {
        this.#options.logger.warn({ err, buffered: this.#buffer.length }, "request log write failed; will retry");
        return;
      }
      this.#buffer.splice(0, batch.length);
    }
    if (this.#dropped > 0) {
      this.#options.logger.warn({ dropped: this.#dropped }, "request log rows dropped while the database was unavailable");
      this.#dropped = 0;
    }
  }

  async #expire(): Promise<void> {
    await this.#pool
      .query("delete from gateway_request_log where time < now() - make_interval(days => $1)", [this.#options.retentionDays])
      .catch((err: unknown) => this.#options.logger.warn({ err }, "request log retention failed"));
  }
}
