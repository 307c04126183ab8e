import type { GatewayKey, WorkspaceConfig } from "../config/types.ts";
import type { EndpointSpec } from "../endpoints/specs.ts";
import type { TokenUsage } from "../usage/provider-usage.ts";

/**
 * The usage-limit step of the pipeline: admits a request before any provider is called (or
 * refuses it with the spec's 429), and settles its usage when it ends. Both answer at once when
 * they can (no limit applies, the slices have room), and with a promise only when they must wait
 * for the store: an await of what is already there still costs the request a turn of the
 * microtask queue, and the hot path had a dozen (docs/performance.md, "The gateway against the
 * bare proxy").
 */
export interface UsageStep {
  admit(request: { key: GatewayKey; config: WorkspaceConfig | undefined; spec: EndpointSpec; body: Record<string, unknown> }): UsageTicket | Promise<UsageTicket>;
}

export interface UsageTicket {
  /**
   * With the provider's usage and what it cost (pico-dollars; undefined when no price is known),
   * or undefined when nothing was generated (the reservation is released). Applied when it
   * returns, or (a promise) once it resolves, which it always does, never rejecting: the pipeline
   * waits for it before the caller has the last byte of its answer. The limit step applies it in
   * this process's slices, at once.
   */
  settle(usage: TokenUsage | undefined, costPicos?: bigint): Promise<void> | undefined;
}

