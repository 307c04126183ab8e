import { close, write, writeSync } from "node:fs";

/** How long a write waits before trying again when the descriptor is full (EAGAIN, as SonicBoom waits). */
const RETRY_MS = 100;
const asleep = new Int32Array(new SharedArrayBuffer(4));

/**
 * Writes batches of bytes to a file descriptor in order, one `fs.write` in flight at a time: what
 * the log's batches are handed to (BatchedDestination, logger.ts). A partial write goes on with
 * the rest; a full descriptor (EAGAIN, EBUSY: a pipe whose reader lags) is tried again after
 * 100 ms, or at once by `flushSync` at exit (where SonicBoom left such a batch out); any other
 * error drops that batch and is reported once on stderr, as a log has nowhere else to say it
 * cannot write.
 *
 * Hand-written rather than SonicBoom because SonicBoom copies every buffer it is handed before
 * writing it (`Buffer.from`, on Node ≥ 22.7, in case the caller changes it): a zeroed 8 KiB
 * allocation and a copy per batch, 1.6k instructions a gateway call with the access log on
 * (docs/performance.md, "The log's own writer"). Here a buffer is written as it is and handed
 * back when written, so that the log's batches are reused rather than allocated (Node zeroes
 * even `allocUnsafeSlow`'s 8 KiB, under callgrind another 0.7k a call).
 */
export class FdWriter<B extends Uint8Array = Uint8Array> {
  readonly #fd: number;
  readonly #done: ((buffer: B) => void) | undefined;
  /** Buffers not yet written, and how many bytes of each to write; while `#writing`, the first is in flight. */
  #queue: B[] = [];
  #lengths: number[] = [];
  /** How much of the first buffer is written already (a partial write). */
  #offset = 0;
  #writing = false;
  /** Set while the first buffer waits to be tried again (the descriptor was full): then it is not in flight. */
  #retry: NodeJS.Timeout | undefined;
  #closing = false;
  /** Callers of `flush`, answered when the queue is empty. */
  #waiting: Array<() => void> = [];
  readonly #reported = new Set<string>();

  /** `done`: called with each buffer once it is written (or dropped), so that its owner may use it again. */
  constructor(fd: number, done?: (buffer: B) => void) {
    this.#fd = fd;
    this.#done = done;
  }

  /** Queues the first `length` bytes of `buffer`, which must not change until `done` is called with it. */
  write(buffer: B, length = buffer.length): void {
    if (length === 0) return this.#done?.(buffer);
    this.#queue.push(buffer);
    this.#lengths.push(length);
    if (!this.#writing) this.#next();
  }

  /** Calls `done` once everything queued so far is written (or dropped on an error). */
  flush(done: () => void): void {
    if (this.#writing) this.#waiting.push(done);
    else process.nextTick(done);
  }

  /**
   * Writes what is queued now, blocking (at exit; for a fatal line). A buffer already in flight is
   * left to its asynchronous write, so the two may reach the descriptor in either order; the rest
   * go in order. One waiting to be tried again is written here, from where its last write stopped.
   */
  flushSync(): void {
    if (this.#retry !== undefined) {
      clearTimeout(this.#retry);
      this.#retry = undefined;
      this.#writing = false;
    }
    const kept = this.#writing ? 1 : 0;
    for (let i = kept; i < this.#queue.length; i++) {
      const buffer = this.#queue[i]!;
      const length = this.#lengths[i]!;
      let at = i === 0 ? this.#offset : 0;
      while (at < length) {
        try {
          at += writeSync(this.#fd, buffer, at, length - at);
        } catch (error) {
          if (!retryable(error)) {
            this.#report(error);
            break;
          }
          Atomics.wait(asleep, 0, 0, RETRY_MS);
        }
      }
      this.#done?.(buffer);
    }
    this.#queue.length = kept;
    this.#lengths.length = kept;
    if (!this.#writing) {
      this.#offset = 0;
      this.#answer();
    }
  }

  /** Queues the first `length` bytes of `buffer` and writes them, and what is queued before them, now (flushSync). */
  writeSync(buffer: B, length = buffer.length): void {
    this.#queue.push(buffer);
    this.#lengths.push(length);
    this.flushSync();
  }

  /** Writes what is queued and closes the descriptor once written (not stdout's or stderr's). */
  end(): void {
    this.flushSync();
    this.#closing = true;
    if (!this.#writing) this.#close();
  }

  #next(): void {
    this.#writing = true;
    write(this.#fd, this.#queue[0]!, this.#offset, this.#lengths[0]! - this.#offset, null, this.#written);
  }

  readonly #written = (error: NodeJS.ErrnoException | null, count: number): void => {
    if (error && retryable(error)) {
      this.#retry = setTimeout(() => {
        this.#retry = undefined;
        this.#next();
      }, RETRY_MS);
      this.#retry.unref();
      return;
    }
    if (error) this.#report(error);
    else this.#offset += count;
    if (error || this.#offset === this.#lengths[0]) {
      this.#offset = 0;
      this.#lengths.shift();
      const written = this.#queue.shift()!;
      this.#done?.(written);
    }
    if (this.#queue.length > 0) return this.#next();
    this.#writing = false;
    this.#answer();
    if (this.#closing) this.#close();
  };

  #answer(): void {
    for (const done of this.#waiting.splice(0)) done();
  }

  #close(): void {
    if (this.#fd > 2) close(this.#fd, () => {});
  }

  #report(error: unknown): void {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    // Once a kind of error; not at all when stderr is the descriptor that fails.
    if (this.#fd === 2 || this.#reported.has(code)) return;
    this.#reported.add(code);
    process.stderr.write(`warden: cannot write the log to file descriptor ${this.#fd} (${code}); lines are being dropped\n`);
  }
}

function retryable(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "EAGAIN" || code === "EBUSY";
}
