import type { GatewayKey, WorkspaceConfig } from "../config/types.ts";
import type { EndpointSpec } from "../endpoints/specs.ts";
import type { EntityCounts } from "./redaction.ts";
import type { StreamGuard } from "./stream-guard.ts";

export interface GuardrailRequest {
  key: GatewayKey;
  config: WorkspaceConfig | undefined;
  spec: EndpointSpec;
}

export interface InputRedaction {
  raw: Buffer;
  counts?: EntityCounts;
  verdict: string;
}

/** A non-streamed answer that went through the output guardrails. */
export interface CheckedOutput {
  /** For the request log; undefined when the stage has no guardrails. */
  verdict: string | undefined;
  /** Set when a PII guardrail redacted the answer: what the caller gets instead, and what was replaced. */
  redacted?: { body: Buffer; answer: unknown; counts: EntityCounts };
}

/**
 * The input and output guardrail steps of the pipeline. The checks give a verdict for the request
 * log when the content may go on, and throw (or reject with) the gateway's 422 (or 503 while a
 * detector loads) when not: at once when every detector answered on the event loop, a promise
 * when one had to wait (a worker, a plug-in, a redaction).
 */
export interface GuardrailStep {
  /**
   * When the input stage has a redacting PII guardrail: the raw body to go on with (its caller
   * text's entities replaced by placeholders when `counts` is set; the body as it came when
   * nothing was found, or when the detector failed under fail-open) and the guardrail's verdict
   * (`redacted`, `pass`, `error-open`). Undefined without one. Runs before checkInput, which then
   * reads the redacted body. Undefined at once without one.
   */
  redactInput(request: GuardrailRequest & { body: Record<string, unknown>; raw: Buffer }): Promise<InputRedaction> | undefined;
  /** `redaction`: the redacting guardrail's verdict from redactInput. */
  checkInput(request: GuardrailRequest & { body: Record<string, unknown>; redaction?: string }): string | undefined | Promise<string | undefined>;
  /** `answer`: `body` parsed (undefined when it is not JSON), which the step does not change. */
  checkOutput(request: GuardrailRequest & { body: Buffer; answer: unknown }): CheckedOutput | Promise<CheckedOutput>;
  /** The output guardrails of a streamed answer, or undefined when the stage has none. */
  streamGuard(request: GuardrailRequest): StreamGuard | undefined;
}
