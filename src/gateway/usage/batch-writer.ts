import type { Logger } from "../../platform/logger.ts";

/**
 * What a failed write means for its rows:
 * - `retry`: the store is away (no connection, a timeout): keep them, and write again later;
 * - `refused`: some rows are at fault, and would fail the same way again: the batch is halved
 *   until they are alone, and each is dropped with a log line;
 * - `discard`: the whole batch can never be written (its inference pipeline is gone): dropped
 *   with one log line.
 */
export type WriteFailure = "retry" | "refused" | "discard";

export interface BatchWriterOptions<T> {
  /** Writes one batch, all or nothing; throws when it could not. */
  write(batch: T[]): Promise<void>;
  classify(err: unknown): WriteFailure;
  logger: Logger;
  /** The log lines' messages. */
  messages: {
    /** A write failed and will be retried. */
    retry: string;
    /** One row refused, and dropped. */
    refused: string;
    /** A whole batch discarded. */
    discarded: string;
    /** Rows dropped, the oldest first, because the buffer was full while the store was away. */
    overflow: string;
    /** Rows still buffered when the writer closed: the store did not take them in time. */
    lost: string;
  };
  /** What a log line says of a dropped batch (or row): its IDs, never its content unless wanted. */
  describe(batch: T[]): Record<string, unknown>;
  flushIntervalMs: number;
  batchSize: number;
  /**
   * Writes as soon as a whole batch is buffered, without waiting for the timer: under load, every
   * write is a full batch, which costs the store far less per row than many small ones.
   */
  flushWhenFull?: boolean;
  /** Entries held while the store is away; past it, the oldest are dropped, and counted. */
  maxBuffered: number;
  /** Also a bound in bytes, when entries differ much in size: `sizeOf` says each one's. */
  maxBufferedBytes?: number;
  sizeOf?: (entry: T) => number;
  /** When set, a batch holds entries of one key only (one inference pipeline per write). */
  batchKey?: (entry: T) => string;
}

/**
 * SQLSTATE classes 22 (data exception: a number out of range, text the column cannot take) and 23
 * (integrity constraint violation): the rows are at fault, not the database, and retrying the
 * same rows fails the same way. Anything else (no connection, a timeout) is worth a retry later.
 */
export function isDataError(err: unknown): boolean {
  if (typeof err !== "object" || err === null || !("code" in err) || typeof err.code !== "string") return false;
  return /^2[23][0-9A-Z]{3}$/.test(err.code);
}

/** The longest wait between two writes while the store fails; the first retry is at the next tick. */
const MAX_RETRY_DELAY_MS = 5_000;

/**
 * Rows written off the request path: requests append to a buffer, and a timer writes it in
 * batches. A store that is away delays rows (retried with a growing delay, at most
 * MAX_RETRY_DELAY_MS), and past `maxBuffered` (or `maxBufferedBytes`) drops the oldest, saying how
 * many in the log, rather than holding requests up or growing without bound. A row the store
 * refuses is found by halving its batch, logged and dropped alone: it never holds up the rows
 * behind it. Used by the request log and by the gateway's pipeline rows.
 */
export class BatchWriter<T> {
  readonly #options: BatchWriterOptions<T>;
  #buffer: T[] = [];
  #bytes = 0;
  /** Dropped since the last log line that said so, and in all. */
  #unreportedOverflow = 0;
  #dropped = 0;
  #written = 0;
  /** Consecutive failed writes, and when the timer may try again. */
  #failures = 0;
  #retryAt = 0;
  #flushing: Promise<void> | undefined;
  #flushSoon = false;
  /** A flush asks for everything buffered; otherwise (flushWhenFull) only whole batches are written. */
  #drainAll = false;
  readonly #timer: NodeJS.Timeout;

  constructor(options: BatchWriterOptions<T>) {
    this.#options = options;
    this.#timer = setInterval(() => {
      if (this.#buffer.length > 0 && Date.now() >= this.#retryAt) void this.flush();
    }, options.flushIntervalMs);
    this.#timer.unref();
  }

  add(entry: T): void {
    this.#buffer.push(entry);
    if (this.#options.sizeOf) this.#bytes += this.#options.sizeOf(entry);
    this.#trim();
    if (this.#options.flushWhenFull && !this.#flushSoon && this.#flushing === undefined && this.#buffer.length >= this.#options.batchSize && Date.now() >= this.#retryAt) {
      // Once the caller's loop of adds is done: a batch is taken whole, not while it is being added to.
      this.#flushSoon = true;
      queueMicrotask(() => {
        this.#flushSoon = false;
        void this.#start();
      });
    }
  }

  /** Entries in memory, not yet written. */
  get buffered(): number {
    return this.#buffer.length;
  }

  /** Entries dropped since start: past the buffer's bounds, refused, or discarded. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Entries written since start. */
  get written(): number {
    return this.#written;
  }

  /**
   * Writes what is buffered now, whatever the retry delay. A write in progress is joined: it goes
   * on until the buffer is empty (or a write fails, which ends this flush too).
   */
  flush(): Promise<void> {
    this.#drainAll = true;
    const running = this.#flushing;
    if (!running) return this.#start();
    // It may have ended its loop already, with rows added since: those are written next.
    return running.then(() => (this.#drainAll && this.#buffer.length > 0 ? this.#start() : undefined));
  }

  #start(): Promise<void> {
    this.#flushing ??= this.#write().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  /** Stops the timer and writes what is left, once: what the store does not take then is lost, and counted. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
    const lost = this.#buffer.length;
    if (lost > 0) {
      this.#buffer = [];
      this.#bytes = 0;
      this.#dropped += lost;
      this.#options.logger.error({ lost }, this.#options.messages.lost);
    }
  }

  async #write(): Promise<void> {
    while (this.#buffer.length > 0 && (this.#drainAll || this.#buffer.length >= this.#options.batchSize)) {
      // Taken out while written, so that rows recorded meanwhile (and the drop of the oldest) never
      // mix with the batch in flight.
      const batch = this.#take();
      const failed = await this.#insert(batch);
      if (failed) {
        this.#buffer.unshift(...failed.unwritten);
        if (this.#options.sizeOf) for (const entry of failed.unwritten) this.#bytes += this.#options.sizeOf(entry);
        this.#trim();
        this.#failures += 1;
        this.#retryAt = Date.now() + Math.min(MAX_RETRY_DELAY_MS, this.#options.flushIntervalMs * 2 ** (this.#failures - 1));
        const dropped = this.#unreportedOverflow > 0 ? { dropped: this.#unreportedOverflow } : {};
        this.#options.logger.warn({ err: failed.err, buffered: this.#buffer.length, ...dropped }, this.#options.messages.retry);
        this.#drainAll = false;
        return;
      }
      this.#failures = 0;
      this.#retryAt = 0;
    }
    if (this.#buffer.length === 0) this.#drainAll = false;
    if (this.#unreportedOverflow > 0) {
      this.#options.logger.warn({ dropped: this.#unreportedOverflow }, this.#options.messages.overflow);
      this.#unreportedOverflow = 0;
    }
  }

  /** The oldest entries, at most batchSize; with batchKey, only those of the oldest one's key. */
  #take(): T[] {
    const { batchSize, batchKey, sizeOf } = this.#options;
    let batch: T[];
    if (!batchKey) batch = this.#buffer.splice(0, batchSize);
    else {
      const key = batchKey(this.#buffer[0]!);
      const rest: T[] = [];
      batch = [];
      for (const entry of this.#buffer) (batch.length < batchSize && batchKey(entry) === key ? batch : rest).push(entry);
      this.#buffer = rest;
    }
    if (sizeOf) for (const entry of batch) this.#bytes -= sizeOf(entry);
    return batch;
  }

  /**
   * Writes the rows. When the store refuses their data, halves them until the refused rows are
   * alone, and drops each with a log line: at most 2n - 1 writes for n rows, never a loop. When it
   * discards them, drops them all with one. Any other failure stops the write: it returns the rows
   * not yet written, in order, to retry.
   */
  async #insert(rows: T[]): Promise<{ unwritten: T[]; err: unknown } | undefined> {
    try {
      await this.#options.write(rows);
      this.#written += rows.length;
      return undefined;
    } catch (err) {
      const failure = this.#options.classify(err);
      if (failure === "retry") return { unwritten: rows, err };
      if (failure === "discard" || rows.length === 1) {
        this.#dropped += rows.length;
        const message = failure === "discard" ? this.#options.messages.discarded : this.#options.messages.refused;
        this.#options.logger.error({ err, count: rows.length, ...this.#options.describe(rows) }, message);
        return undefined;
      }
      const half = Math.ceil(rows.length / 2);
      const first = await this.#insert(rows.slice(0, half));
      if (first) return { unwritten: [...first.unwritten, ...rows.slice(half)], err: first.err };
      return this.#insert(rows.slice(half));
    }
  }

  /** Past the bounds, the oldest entries go, and are counted. */
  #trim(): void {
    const { maxBuffered, maxBufferedBytes, sizeOf } = this.#options;
    let excess = Math.max(0, this.#buffer.length - maxBuffered);
    if (sizeOf && maxBufferedBytes !== undefined && this.#bytes > maxBufferedBytes) {
      let bytes = this.#bytes;
      for (let i = 0; i < excess; i++) bytes -= sizeOf(this.#buffer[i]!);
      while (bytes > maxBufferedBytes && excess < this.#buffer.length) bytes -= sizeOf(this.#buffer[excess++]!);
    }
    if (excess === 0) return;
    const gone = this.#buffer.splice(0, excess);
    if (sizeOf) for (const entry of gone) this.#bytes -= sizeOf(entry);
    this.#dropped += excess;
    this.#unreportedOverflow += excess;
  }
}
