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

/** Bytes (counted as UTF-16 units) gathered before they are written. */
const BATCH_CHARS = 4096;
/** The longest a line waits to be written. */
const FLUSH_EVERY_MS = 250;

/** Destinations not yet ended: each writes what it holds when the process exits (one listener for all). */
const open = new Set<BatchedDestination>();
process.on("exit", () => {
  for (const destination of open) destination.flushSync();
});

/**
 * Where lines go: file descriptor `fd`, in batches of 4 KiB, at least every 250 ms, and
 * synchronously when the process exits (a SIGKILL loses at most the last 250 ms). Pino's default
 * writes each line with an fs.write of its own when none is pending: under load, with an access
 * line per request, that took 6% of the gateway's busy time, against 4% batched
 * (docs/performance.md, "Observability cost").
 *
 * The lines are gathered here, not by SonicBoom's own `minLength` alone: SonicBoom measures its
 * whole pending buffer with `Buffer.byteLength` at every write, which copies (flattens) it each
 * time, and that was half of what an access line cost (2.5 of 5 µs). SonicBoom gets a batch at a
 * time and does the writing: one write in flight, retries, the synchronous flush. Its own
 * `minLength` is the batch size, so that a smaller remainder handed to it (on the timer, at exit)
 * starts no asynchronous write by itself: the timer asks for one, the exit writes synchronously.
 */
export class BatchedDestination {
  readonly #sink: ReturnType<typeof pino.destination>;
  #lines: string[] = [];
  #chars = 0;
  readonly #timer: NodeJS.Timeout;

  constructor(fd: number) {
    this.#sink = pino.destination({ dest: fd, sync: false, minLength: BATCH_CHARS });
    // As SonicBoom's own periodic flush does: a remainder it holds (under its minimum) leaves too.
    this.#timer = setInterval(() => this.flush(), FLUSH_EVERY_MS);
    this.#timer.unref();
    open.add(this);
  }

  write(line: string): boolean {
    this.#lines.push(line);
    this.#chars += line.length;
    if (this.#chars >= BATCH_CHARS) this.#pass();
    return true;
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

  /** Hands the gathered lines to SonicBoom as one string. */
  #pass(): void {
    if (this.#lines.length === 0) return;
    const chunk = this.#lines.length === 1 ? this.#lines[0]! : this.#lines.join("");
    this.#lines = [];
    this.#chars = 0;
    this.#sink.write(chunk);
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
