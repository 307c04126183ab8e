import { performance } from "node:perf_hooks";

/**
 * The gateway's own time per step of one request, for the `Server-Timing` response header (when
 * WARDEN_GATEWAY_SERVER_TIMING is on): callers see what the gateway added to their call, step by
 * step, beside what the provider took. Each step is the time since the previous one.
 */
export class ServerTiming {
  #last: number;
  readonly #steps: [string, number][] = [];

  constructor(started: number) {
    this.#last = started;
  }

  /** Ends the step called `name` now. */
  step(name: string): void {
    const now = performance.now();
    this.#steps.push([name, now - this.#last]);
    this.#last = now;
  }

  /** The header's value: each step, then `gateway`, the sum of every step but the provider's (ms, two decimals). */
  header(): string {
    let own = 0;
    const parts: string[] = [];
    for (const [name, ms] of this.#steps) {
      if (name !== "provider") own += ms;
      parts.push(`${name};dur=${ms.toFixed(2)}`);
    }
    parts.push(`gateway;dur=${own.toFixed(2)}`);
    return parts.join(", ");
  }
}
