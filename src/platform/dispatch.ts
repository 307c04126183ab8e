import type { StopSignal } from "./stop.ts";
import { Buffer } from "node:buffer";
import type { Dispatcher } from "undici";
import { BodyTooLarge } from "./http.ts";

/**
 * An answer as it starts: its status and headers, and its body as it arrives, read one way, once:
 * chunk by chunk (`chunks()`) or whole (`bytes()`).
 */
export interface DispatchedAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /**
   * The body chunk by chunk, from its first byte. An error (the call's, or the caller's signal's
   * reason) rejects `next()` once `mapError` has typed it, after every chunk that came before it;
   * `return()` (an abandoned `for await`) stops the call. While the reader is behind, the
   * connection is paused, so that what is held stays bounded.
   */
  chunks(mapError?: (err: unknown) => unknown): AsyncIterableIterator<Buffer>;
  /** The whole body. Past `maxBytes` it rejects with BodyTooLarge and stops the call. */
  bytes(maxBytes?: number): Promise<Buffer>;
}

/** Held before a reader chooses, in bytes: as undici's own response bodies, then the connection pauses. */
const BODY_HIGH_WATER_MARK = 64 * 1024;
/** Chunks a chunk reader may leave waiting before the connection pauses, and left when it resumes. */
const HELD_CHUNKS_HIGH = 16;
const HELD_CHUNKS_LOW = 4;

const noop = (): void => undefined;
const asIs = (err: unknown): unknown => err;

type Waiting = { resolve: (result: IteratorResult<Buffer, undefined>) => void; reject: (err: unknown) => void };

/** How the body is being read: not yet (what arrives is held), chunk by chunk, or whole. */
type Reading =
  | { kind: "undecided" }
  | { kind: "chunks"; mapError: (err: unknown) => unknown; waiting: Waiting | undefined }
  | { kind: "whole"; maxBytes: number; resolve: (body: Buffer) => void; reject: (err: unknown) => void };

/**
 * One answer's body, fed by the handler's events and read without a stream between: a
 * `Readable` cost every call the stream's machinery and a dozen turns of the tick queue, and
 * iterating one (`for await`) an iterator step and promises per chunk (docs/performance.md,
 * "The gateway against the bare proxy, by instruction"). Until its reader says how it reads,
 * what arrives is held (up to the high water mark, then the connection pauses).
 */
class Answer implements DispatchedAnswer {
  readonly statusCode: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly #controller: Dispatcher.DispatchController;
  /** Tells the handler the call is over (it stops listening to the signal). */
  readonly #finish: () => void;
  #reading: Reading = { kind: "undecided" };
  #held: Buffer[] = [];
  #size = 0;
  /** No more data will come: the call ended, failed or was stopped. */
  #ended = false;
  /** Whether the connection is paused: a resume costs undici's client a pass over its queue, so it is made only then. */
  #paused = false;
  /** Why the call failed or stopped, until its reader is told (once). */
  #failure: { error: unknown } | undefined;

  constructor(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>, finish: () => void) {
    this.#controller = controller;
    this.statusCode = statusCode;
    this.headers = headers;
    this.#finish = finish;
  }

  chunks(mapError: (err: unknown) => unknown = asIs): AsyncIterableIterator<Buffer> {
    if (this.#reading.kind !== "undecided") throw new Error("the answer's body is already being read");
    const reading: Reading = { kind: "chunks", mapError, waiting: undefined };
    this.#reading = reading;
    if (this.#failure) this.#failure = { error: mapError(this.#failure.error) };
    if (this.#held.length < HELD_CHUNKS_HIGH) this.#resume();
    const iterator: AsyncIterableIterator<Buffer> = {
      next: () => {
        const held = this.#held;
        if (held.length > 0) {
          const value = held.shift()!;
          if (held.length <= HELD_CHUNKS_LOW) this.#resume();
          return Promise.resolve({ done: false, value });
        }
        const failure = this.#failure;
        if (failure) {
          // Reported once, after every chunk that came before it.
          this.#failure = undefined;
          return Promise.reject(failure.error);
        }
        if (this.#ended) return Promise.resolve({ done: true, value: undefined });
        return new Promise((resolve, reject) => {
          reading.waiting = { resolve, reject };
        });
      },
      return: () => {
        this.#held = [];
        this.#failure = undefined;
        // Left before its end (the caller went, or stopped reading): the call stops too.
        if (!this.#ended) this.#stopCall(new Error("the answer was abandoned"));
        return Promise.resolve({ done: true, value: undefined });
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  bytes(maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer> {
    if (this.#reading.kind !== "undecided") return Promise.reject(new Error("the answer's body is already being read"));
    if (this.#failure) return Promise.reject(this.#failure.error);
    if (this.#size > maxBytes) {
      this.stop(new BodyTooLarge());
      return Promise.reject(new BodyTooLarge());
    }
    if (this.#ended) {
      this.#reading = { kind: "whole", maxBytes, resolve: noop, reject: noop };
      return Promise.resolve(this.#whole());
    }
    return new Promise((resolve, reject) => {
      this.#reading = { kind: "whole", maxBytes, resolve, reject };
      this.#resume();
    });
  }

  data(chunk: Buffer): void {
    if (this.#ended) return;
    const reading = this.#reading;
    if (reading.kind === "chunks") {
      const waiting = reading.waiting;
      if (waiting) {
        reading.waiting = undefined;
        waiting.resolve({ done: false, value: chunk });
        return;
      }
      this.#held.push(chunk);
      if (this.#held.length >= HELD_CHUNKS_HIGH) this.#pause();
      return;
    }
    this.#held.push(chunk);
    this.#size += chunk.length;
    if (reading.kind === "whole" && this.#size > reading.maxBytes) this.stop(new BodyTooLarge());
    else if (reading.kind === "undecided" && this.#size >= BODY_HIGH_WATER_MARK) this.#pause();
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    const reading = this.#reading;
    if (reading.kind === "whole") reading.resolve(this.#whole());
    else if (reading.kind === "chunks" && reading.waiting) {
      const waiting = reading.waiting;
      reading.waiting = undefined;
      waiting.resolve({ done: true, value: undefined });
    }
  }

  /** The reader or the caller's signal stops the call (`reason`): the reader learns it, now or when it reads. */
  stop(reason: unknown): void {
    if (this.#ended) return;
    this.#stopCall(reason);
    this.#failed(reason);
  }

  /** undici says the call failed: over, nothing to stop. */
  failed(err: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#failed(err);
  }

  #failed(err: unknown): void {
    const reading = this.#reading;
    if (reading.kind === "whole") {
      this.#held = [];
      reading.reject(err);
      return;
    }
    const error = reading.kind === "chunks" ? reading.mapError(err) : err;
    if (reading.kind === "chunks" && reading.waiting) {
      const waiting = reading.waiting;
      reading.waiting = undefined;
      waiting.reject(error);
      return;
    }
    if (reading.kind === "undecided") this.#held = [];
    this.#failure = { error };
  }

  #stopCall(reason: unknown): void {
    this.#ended = true;
    this.#controller.abort(reason as Error);
    this.#finish();
  }

  #pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#controller.pause();
  }

  #resume(): void {
    if (!this.#paused || this.#ended) return;
    this.#paused = false;
    this.#controller.resume();
  }

  #whole(): Buffer {
    const held = this.#held;
    this.#held = [];
    return held.length === 1 ? held[0]! : Buffer.concat(held, this.#size);
  }
}

/**
 * One call through undici's `dispatch` (a provider's, a guardrail plug-in's), with this handler in
 * place of its `request` API's. `request` wraps every call in an AsyncResource, and with it every
 * call's objects outlived the young generation's collections: in a gateway at 1,000 calls a
 * second, each scavenge copied some 3.5 MB and paused the event loop 7–17 ms, and most of what it
 * promoted came from this (measured: docs/performance.md, "What survives a scavenge"). A plain
 * object here, the same undici underneath (its pools, timeouts and errors).
 *
 * The body (Answer) stops the call when it is abandoned before its end. Aborting `signal` rejects
 * the call with its reason before the answer starts, and ends the body with it after.
 */
class AnswerHandler implements Dispatcher.DispatchHandler {
  readonly #signal: StopSignal;
  readonly #resolve: (answer: DispatchedAnswer) => void;
  readonly #reject: (err: unknown) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #answer: Answer | undefined;
  #complete = false;

  constructor(signal: StopSignal, resolve: (answer: DispatchedAnswer) => void, reject: (err: unknown) => void) {
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
    signal.addEventListener("abort", this.#onAbort, { once: true });
  }

  readonly #onAbort = (): void => {
    const reason = this.#signal.reason as Error;
    if (this.#answer) this.#answer.stop(reason);
    else this.#controller?.abort(reason);
  };

  readonly #finish = (): void => {
    if (this.#complete) return;
    this.#complete = true;
    this.#signal.removeEventListener("abort", this.#onAbort);
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#signal.aborted) controller.abort(this.#signal.reason as Error);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // A 1xx answer is interim; the final one follows.
    if (statusCode < 200) return;
    this.#answer = new Answer(controller, statusCode, headers, this.#finish);
    this.#resolve(this.#answer);
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#answer?.data(chunk);
  }

  onResponseEnd(): void {
    this.#finish();
    this.#answer?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    const wasComplete = this.#complete;
    this.#finish();
    if (this.#answer === undefined) this.#reject(this.#signal.aborted ? this.#signal.reason : err);
    else if (!wasComplete) this.#answer.failed(err);
  }
}

/** Sends `options` through `dispatcher`; resolves once the answer's headers have arrived, as undici's `request` does. */
export function dispatchRequest(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions, signal: StopSignal): Promise<DispatchedAnswer> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    dispatcher.dispatch(options, new AnswerHandler(signal, resolve, reject));
  });
}
