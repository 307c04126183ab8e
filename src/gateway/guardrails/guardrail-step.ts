import type { GatewayKey } from "../config/types.ts";

/**
 * The input and output guardrail steps of the pipeline. Each resolves when the content may go
 * on, and rejects with the gateway's 422 (or 503 while loading) when not. Both pass everything
 * until guardrails are built.
 */
export interface GuardrailStep {
  checkInput(request: { key: GatewayKey; body: Record<string, unknown> }): Promise<void>;
  checkOutput(request: { key: GatewayKey; body: Buffer }): Promise<void>;
}

export const noGuardrails: GuardrailStep = {
  checkInput: () => Promise.resolve(),
  checkOutput: () => Promise.resolve(),
};
