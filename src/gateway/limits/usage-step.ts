import type { GatewayKey, WorkspaceConfig } from "../config/types.ts";
import type { EndpointSpec } from "../endpoints/specs.ts";
import type { TokenUsage } from "../usage/provider-usage.ts";

/**
 * The usage-limit step of the pipeline: admits a request before any provider is called (or
 * refuses it with the spec's 429), and settles its usage when it ends.
 */
export interface UsageStep {
  admit(request: { key: GatewayKey; config: WorkspaceConfig | undefined; spec: EndpointSpec; body: Record<string, unknown> }): Promise<UsageTicket>;
}

export interface UsageTicket {
  /**
   * With the provider's usage and what it cost (pico-dollars; undefined when no price is known),
   * or undefined when nothing was generated (the reservation is released). Resolves once the
   * admission step has applied it (the limit step: in this process's slices, at once), and never
   * rejects: the pipeline awaits it before the caller has the last byte of its answer.
   */
  settle(usage: TokenUsage | undefined, costPicos?: bigint): Promise<void>;
}

