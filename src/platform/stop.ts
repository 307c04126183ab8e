/**
 * What stops a call: an AbortSignal (a deadline's, `AbortSignal.timeout`), or a `Stop`. The part
 * of AbortSignal that dispatch.ts and the gateway's pipeline use.
 */
export interface StopSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  throwIfAborted(): void;
  /** Called once, when the call is stopped; not at all when it was stopped already (as an AbortSignal's abort event). */
  addEventListener(type: "abort", listener: () => void, options: { once: true }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/**
 * An AbortController and its signal in one, for what every gateway call makes: the caller going
 * away stops its provider call. An AbortController, its signal and an abort listener added and
 * taken off cost some 300 ns a call in a loop (Node's EventTarget), this a few: docs/performance.md,
 * "Small costs on every call". Its reason is an AbortController's (a DOMException named AbortError).
 */
export class Stop implements StopSignal {
  aborted = false;
  reason: unknown = undefined;
  #listeners: (() => void)[] | undefined;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = new DOMException("This operation was aborted", "AbortError");
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** `once` is how a Stop calls every listener; the option is taken as an AbortSignal takes it. */
  addEventListener(_type: "abort", listener: () => void, _options?: { once: true }): void {
    if (!this.aborted) (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    const listeners = this.#listeners;
    const at = listeners ? listeners.indexOf(listener) : -1;
    if (at !== -1) listeners!.splice(at, 1);
  }
}
