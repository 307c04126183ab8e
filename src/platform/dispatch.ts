import { Readable } from "node:stream";
import type { Dispatcher } from "undici";

/** An answer as it starts: its status and headers, and its body as it arrives. */
export interface DispatchedAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

/** As undici's own response bodies: a read of at most this much is buffered before the connection pauses. */
const BODY_HIGH_WATER_MARK = 64 * 1024;

/**
 * One call through undici's `dispatch` (a provider's, a guardrail plug-in's), with this handler in
 * place of its `request` API's. `request` wraps every call in an AsyncResource, and with it every
 * call's objects outlived the young generation's collections: in a gateway at 1,000 calls a
 * second, each scavenge copied some 3.5 MB and paused the event loop 7–17 ms, and most of what it
 * promoted came from this (measured: docs/performance.md, "What survives a scavenge"). A plain
 * object here, the same undici underneath (its pools, timeouts and errors).
 *
 * The body is a Readable that pauses the connection while its reader is behind, and stops the
 * call when it is destroyed before its end. Aborting `signal` rejects the call with its reason
 * before the answer starts, and destroys the body with it after.
 */
class AnswerHandler implements Dispatcher.DispatchHandler {
  readonly #signal: AbortSignal;
  readonly #resolve: (answer: DispatchedAnswer) => void;
  readonly #reject: (err: unknown) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #body: Readable | undefined;
  #complete = false;

  constructor(signal: AbortSignal, resolve: (answer: DispatchedAnswer) => void, reject: (err: unknown) => void) {
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
    signal.addEventListener("abort", this.#onAbort, { once: true });
  }

  readonly #onAbort = (): void => {
    const reason = this.#signal.reason as Error;
    if (this.#body) this.#body.destroy(reason);
    else this.#controller?.abort(reason);
  };

  #finish(): void {
    this.#complete = true;
    this.#signal.removeEventListener("abort", this.#onAbort);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#signal.aborted) controller.abort(this.#signal.reason as Error);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // A 1xx answer is interim; the final one follows.
    if (statusCode < 200) return;
    const body = new Readable({
      highWaterMark: BODY_HIGH_WATER_MARK,
      read: () => controller.resume(),
      destroy: (err, done) => {
        // Left before its end (the caller went, or stopped reading): the call stops too.
        if (!this.#complete) {
          controller.abort(err ?? new Error("the answer was abandoned"));
          this.#finish();
        }
        done(err);
      },
    });
    this.#body = body;
    this.#resolve({ statusCode, headers, body });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#body?.push(chunk) === false) controller.pause();
  }

  onResponseEnd(): void {
    this.#finish();
    this.#body?.push(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    const wasComplete = this.#complete;
    this.#finish();
    if (this.#body === undefined) this.#reject(this.#signal.aborted ? this.#signal.reason : err);
    else if (!wasComplete && !this.#body.destroyed) this.#body.destroy(err);
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
