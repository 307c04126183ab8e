import { Buffer } from "node:buffer";
import { pino, type Logger } from "pino";

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

/** Bytes gathered before they are written (under SonicBoom's 16 KiB `maxWrite`, as its `minLength` must be). */
const BATCH_BYTES = 8192;
/** The longest a line waits to be written. */
const FLUSH_EVERY_MS = 250;

/** Destinations not yet ended: each writes what it holds when the process exits (one listener for all). */
const open = new Set<BatchedDestination>();
process.on("exit", () => {
  for (const destination of open) destination.flushSync();
});

/** SonicBoom in its buffer mode, which takes bytes: its type declarations know only its text mode. */
type ByteSink = Omit<ReturnType<typeof pino.destination>, "write"> & { write(bytes: Buffer): boolean };

/**
 * Where lines go: file descriptor `fd`, in batches of 8 KiB, at least every 250 ms, and
 * synchronously when the process exits (a SIGKILL loses at most the last 250 ms). Pino's default
 * writes each line with an fs.write of its own when none is pending: under load, with an access
 * line per request, that took 6% of the gateway's busy time, against 4% batched
 * (docs/performance.md, "Observability cost").
 *
 * Lines are encoded into a batch of bytes here, each once, and SonicBoom is handed the batch as
 * a Buffer (its buffer mode). Handed strings, SonicBoom measured every chunk and its pending text
 * with `Buffer.byteLength`, grew the pending text by concatenation, and encoded each write twice
 * (once for fs.write, once more to count what was written): 11,000 instructions an access line
 * went to UTF-8 alone in a whole gateway under callgrind, where copying an ASCII line into the
 * batch takes 1,600 (docs/performance.md, "Instructions a call, whole gateways"). SonicBoom does
 * the writing: one write in flight, retries, the synchronous flush. Its own `minLength` is the
 * batch size, so that a smaller remainder handed to it (on the timer, at exit) starts no
 * asynchronous write by itself: the timer asks for one, the exit writes synchronously.
 */
export class BatchedDestination {
  readonly #sink: ByteSink;
  #batch = Buffer.allocUnsafeSlow(BATCH_BYTES);
  #at = 0;
  readonly #timer: NodeJS.Timeout;

  constructor(fd: number) {
    this.#sink = pino.destination({ dest: fd, sync: false, minLength: BATCH_BYTES, contentMode: "buffer" }) as unknown as ByteSink;
    // As SonicBoom's own periodic flush does: a remainder it holds (under its minimum) leaves too.
    this.#timer = setInterval(() => this.flush(), FLUSH_EVERY_MS);
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
        this.#sink.write(Buffer.from(line));
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
        this.#sink.write(Buffer.from(line, "latin1"));
        return;
      }
    }
    this.#at += this.#batch.write(line, this.#at, "latin1");
    if (this.#at === BATCH_BYTES) this.#pass();
  }

  /** Writes what is gathered, and calls `done` when it is written (pino's `logger.flush`). */
  flush(done?: (err?: Error) => void): void {
    this.#pass();
    this.#sink.flush(done);
  }

  /** Writes everything now, blocking (pino calls it for a fatal line; the process's exit does too). */
  flushSync(): void {
    this.#pass();
    this.#sink.flushSync();
  }

  /** Writes what is left and closes the file descriptor. */
  end(): void {
    this.flushSync();
    clearInterval(this.#timer);
    open.delete(this);
    this.#sink.end();
  }

  /** Hands the gathered bytes to SonicBoom, which keeps them until written: the next batch is a new buffer. */
  #pass(): void {
    if (this.#at === 0) return;
    const bytes = this.#batch.subarray(0, this.#at);
    this.#batch = Buffer.allocUnsafeSlow(BATCH_BYTES);
    this.#at = 0;
    this.#sink.write(bytes);
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
