import { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import { BodyTooLarge } from "./http.ts";

/**
 * An answer as it starts: its status and headers, and its body as it arrives, read one way, once:
 * as a stream (`body`) or whole (`bytes()`).
 */
export interface DispatchedAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as a stream, made when first asked for; it pauses the connection while its reader is behind. */
  readonly body: Readable;
  /**
   * The whole body, gathered without a stream between: a Readable costs a non-streamed call the
   * stream's machinery and a dozen turns of the tick queue (docs/performance.md, "The gateway
   * against the bare proxy"). Past `maxBytes` it rejects with BodyTooLarge and stops the call.
   */
  bytes(maxBytes?: number): Promise<Buffer>;
}

/** As undici's own response bodies: a read of at most this much is buffered before the connection pauses. */
const BODY_HIGH_WATER_MARK = 64 * 1024;

const noop = (): void => undefined;

/** How the body is being read: not yet (what arrives is held), as a stream, or whole. */
type Reading =
  | { kind: "undecided" }
  | { kind: "stream"; stream: Readable }
  | { kind: "whole"; maxBytes: number; resolve: (body: Buffer) => void; reject: (err: unknown) => void };

/**
 * One answer's body. Until its reader says how it reads, what arrives is held (up to the high
 * water mark, then the connection pauses); a stream asked for later starts with what was held.
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
  #ended = false;
  /** Whether the connection is paused: a resume costs undici's client a pass over its queue, so it is made only then. */
  #paused = false;
  #failure: { error: unknown } | undefined;

  constructor(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>, finish: () => void) {
    this.#controller = controller;
    this.statusCode = statusCode;
    this.headers = headers;
    this.#finish = finish;
  }

  get body(): Readable {
    if (this.#reading.kind === "stream") return this.#reading.stream;
    if (this.#reading.kind === "whole") throw new Error("the answer's body is already being read whole");
    const stream = new Readable({
      highWaterMark: BODY_HIGH_WATER_MARK,
      read: () => this.#resume(),
      destroy: (err, done) => {
        // Left before its end (the caller went, or stopped reading): the call stops too.
        if (!this.#ended) {
          this.#ended = true;
          this.#controller.abort(err ?? new Error("the answer was abandoned"));
          this.#finish();
        }
        done(err);
      },
    });
    this.#reading = { kind: "stream", stream };
    for (const chunk of this.#held) stream.push(chunk);
    this.#held = [];
    if (this.#failure) stream.destroy(this.#failure.error as Error);
    else if (this.#ended) stream.push(null);
    return stream;
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
      // Held up to the high water mark so far: the rest may come now.
      this.#resume();
    });
  }

  data(chunk: Buffer): void {
    const reading = this.#reading;
    if (reading.kind === "stream") {
      if (!reading.stream.push(chunk)) this.#pause();
      return;
    }
    this.#held.push(chunk);
    this.#size += chunk.length;
    if (reading.kind === "whole" && this.#size > reading.maxBytes) this.stop(new BodyTooLarge());
    else if (reading.kind === "undecided" && this.#size >= BODY_HIGH_WATER_MARK) this.#pause();
  }

  end(): void {
    this.#ended = true;
    const reading = this.#reading;
    if (reading.kind === "stream") reading.stream.push(null);
    else if (reading.kind === "whole") reading.resolve(this.#whole());
  }

  /** The reader or the caller's signal stops the call (`reason`): the reader learns it, now or when it reads. */
  stop(reason: unknown): void {
    this.#fail(reason, true);
  }

  /** undici says the call failed: over, nothing to stop. */
  failed(err: unknown): void {
    this.#fail(err, false);
  }

  #fail(err: unknown, stop: boolean): void {
    if (!stop) this.#ended = true;
    const reading = this.#reading;
    if (reading.kind === "stream") {
      // Its destroy stops the call when it has not ended.
      if (!reading.stream.destroyed) reading.stream.destroy(err as Error);
      return;
    }
    if (this.#failure || (reading.kind === "whole" && this.#ended && stop)) return;
    this.#failure = { error: err };
    this.#held = [];
    if (!this.#ended) {
      this.#ended = true;
      this.#controller.abort(err as Error);
      this.#finish();
    }
    if (reading.kind === "whole") reading.reject(err);
  }

  #pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#controller.pause();
  }

  #resume(): void {
    if (!this.#paused) return;
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
  readonly #signal: AbortSignal;
  readonly #resolve: (answer: DispatchedAnswer) => void;
  readonly #reject: (err: unknown) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #answer: Answer | undefined;
  #complete = false;

  constructor(signal: AbortSignal, resolve: (answer: DispatchedAnswer) => void, reject: (err: unknown) => void) {
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
export function dispatchRequest(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions, signal: AbortSignal): Promise<DispatchedAnswer> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    dispatcher.dispatch(options, new AnswerHandler(signal, resolve, reject));
  });
}
