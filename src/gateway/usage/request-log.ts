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

const columns = [
  "request_id", "time", "workspace_id", "key_id", "user_id", "group_ids", "endpoint", "model", "provider", "status",
  "error_type", "latency_ms", "ttfb_ms", "input_tokens", "output_tokens", "tokens_estimated", "guardrail_verdict",
];

/**
 * The request log, written off the hot path: requests append to a buffer, and a timer writes it
 * in multi-row inserts. A database outage delays rows, and past `maxBuffered` drops the oldest,
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
    this.#options = { flushIntervalMs: 1000, batchSize: 1000, maxBuffered: 100_000, ...options };
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
      const values: unknown[] = [];
      const rows = batch.map((e, i) => {
        values.push(
          e.requestId, e.time, e.workspaceId, e.keyId, e.userId, e.groupIds, e.endpoint, e.model, e.provider, e.status,
          e.errorType, e.latencyMs, e.ttfbMs, e.inputTokens, e.outputTokens, e.tokensEstimated, e.guardrailVerdict,
        );
        return `(${columns.map((_, j) => `$${i * columns.length + j + 1}`).join(", ")})`;
      });
      try {
        await this.#pool.query(`insert into gateway_request_log (${columns.join(", ")}) values ${rows.join(", ")}`, values);
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
