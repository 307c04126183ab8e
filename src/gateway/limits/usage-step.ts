import type { GatewayKey } from "../config/types.ts";

/**
 * The usage-limit step of the pipeline: admits a request before any provider is called, and
 * settles its usage when it ends. It admits everything until usage limits are built.
 */
export interface UsageStep {
  admit(request: { key: GatewayKey; model: string }): Promise<UsageTicket>;
}

export interface UsageTicket {
  settle(usage: { inputTokens: number; outputTokens: number } | undefined): void;
}

export const unlimitedUsage: UsageStep = {
  admit: () => Promise.resolve({ settle: () => undefined }),
};
