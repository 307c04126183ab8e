import { Buffer } from "node:buffer";
import { pino, type Logger } from "pino";
import { FdWriter } from "./fd-writer.ts";

export type { Logger };

export function createLogger(level: string): Logger {
  return pino(
    {
      level,
      base: { service: "warden" },
      redact: {
        paths: ["req.headers.authorization", "req.headers['x-api-key']", "*.secureKey", "*.adminKey"],
        censor: "[redacted]",
      },
    },
    new BatchedDestination(process.stdout.fd ?? 1),
  );
}

/** Bytes gathered before they are written. */
const BATCH_BYTES = 8192;
/** Written batches kept for reuse. */
const SPARE_BATCHES = 4;
/** The longest a line waits to be written. */
const FLUSH_EVERY_MS = 250;

/** Destinations not yet ended: each writes what it holds when the process exits (one listener for all). */
const open = new Set<BatchedDestination>();
process.on("exit", () => {
  for (const destination of open) destination.flushSync();
});

/**
 * Where lines go: file descriptor `fd`, in batches of 8 KiB, at least every 250 ms, and
 * synchronously when the process exits (a SIGKILL loses at most the last 250 ms). Pino's default
 * writes each line with an fs.write of its own when none is pending: under load, with an access
 * line per request, that took 6% of the gateway's busy time, against 4% batched
 * (docs/performance.md, "Observability cost").
 *
 * Lines are encoded into a batch of bytes here, each once, and a full batch is handed to an
 * FdWriter, which writes it as it is. Handed strings, SonicBoom (pino's destination) measured
 * every chunk and its pending text with `Buffer.byteLength`, grew the pending text by
 * concatenation, and encoded each write twice (once for fs.write, once more to count what was
 * written): 11,000 instructions an access line went to UTF-8 alone in a whole gateway under
 * callgrind, where copying an ASCII line into the batch takes 1,600 (docs/performance.md,
 * "Instructions a call, whole gateways"); handed buffers, it copied each (fd-writer.ts).
 */
export class BatchedDestination {
  readonly #out: FdWriter<Buffer>;
  #batch: Buffer = Buffer.allocUnsafeSlow(BATCH_BYTES);
  #at = 0;
  /** Batches written and free again: a busy log cycles through a few of them. */
  readonly #spare: Buffer[] = [];
  readonly #timer: NodeJS.Timeout;

  constructor(fd: number) {
    this.#out = new FdWriter<Buffer>(fd, (batch) => {
      // Not a line longer than a batch (its own buffer); a few at most, if writes fell behind.
      if (batch.length === BATCH_BYTES && this.#spare.length < SPARE_BATCHES) this.#spare.push(batch);
    });
    this.#timer = setInterval(() => this.#pass(), FLUSH_EVERY_MS);
    this.#timer.unref();
    open.add(this);
  }

  /** A line of any text, as UTF-8. */
  write(line: string): boolean {
    // A UTF-16 unit takes at most three bytes of UTF-8: only a line that might not fit is measured.
    const room = BATCH_BYTES - this.#at;
    if (line.length * 3 > room && Buffer.byteLength(line) > room) {
      this.#pass();
      if (line.length * 3 > BATCH_BYTES && Buffer.byteLength(line) > BATCH_BYTES) {
        this.#out.write(Buffer.from(line));
        return true;
      }
    }
    this.#at += this.#batch.write(line, this.#at, "utf8");
    if (this.#at === BATCH_BYTES) this.#pass();
    return true;
  }

  /**
   * A line the caller knows to be ASCII (the access log's: access-line.ts escapes every other
   * character), copied as it is: its UTF-8 is its characters, and encoding it as UTF-8 costs three
   * times as much. Any character past U+007F would be written wrong.
   */
  writeAscii(line: string): void {
    if (line.length > BATCH_BYTES - this.#at) {
      this.#pass();
      if (line.length > BATCH_BYTES) {
        this.#out.write(Buffer.from(line, "latin1"));
        return;
      }
    }
    this.#at += this.#batch.write(line, this.#at, "latin1");
    if (this.#at === BATCH_BYTES) this.#pass();
  }

  /** Writes what is gathered, and calls `done` when it is written (pino's `logger.flush`). */
  flush(done?: (err?: Error) => void): void {
    this.#pass();
    if (done) this.#out.flush(done);
  }

  /** Writes everything now, blocking (pino calls it for a fatal line; the process's exit does too). */
  flushSync(): void {
    this.#pass(true);
  }

  /** Writes what is left and closes the file descriptor (not stdout's or stderr's). */
  end(): void {
    this.flushSync();
    clearInterval(this.#timer);
    open.delete(this);
    this.#out.end();
  }

  /**
   * Hands the gathered bytes to the writer, which keeps them until written (`now`: writes them,
   * and what is queued before them, blocking): the next batch is a spare one, or new.
   */
  #pass(now = false): void {
    if (this.#at === 0) {
      if (now) this.#out.flushSync();
      return;
    }
    const full = this.#batch;
    const length = this.#at;
    this.#batch = this.#spare.pop() ?? Buffer.allocUnsafeSlow(BATCH_BYTES);
    this.#at = 0;
    if (now) this.#out.writeSync(full, length);
    else this.#out.write(full, length);
  }
}

/**
 * The logger for access-log lines: a child of `logger` without its redaction. An access line has a
 * fixed set of fields, none of them secret, and redaction's wildcard paths nearly double what a
 * line costs (11 µs against 6 µs per line, measured with the gateway's line).
 */
export function accessLogger(logger: Logger, bindings: Record<string, unknown> = {}): Logger {
  return logger.child(bindings, { redact: { paths: [] } });
}
