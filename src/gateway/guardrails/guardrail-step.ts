import type { GatewayKey, WorkspaceConfig } from "../config/types.ts";
import type { EndpointSpec } from "../endpoints/specs.ts";

export interface GuardrailRequest {
  key: GatewayKey;
  config: WorkspaceConfig | undefined;
  spec: EndpointSpec;
}

/**
 * The input and output guardrail steps of the pipeline. Each resolves with a verdict for the
 * request log when the content may go on, and rejects with the gateway's 422 (or 503 while a
 * detector loads) when not.
 */
export interface GuardrailStep {
  checkInput(request: GuardrailRequest & { body: Record<string, unknown> }): Promise<string | undefined>;
  checkOutput(request: GuardrailRequest & { body: Buffer }): Promise<string | undefined>;
}

