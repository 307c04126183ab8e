import type { GuardrailConfig } from "../../src/gateway/config/types.ts";

/** A guardrail as the snapshot holds it: the built-in detector, defaults, blocking, fail-open. */
export function guardrailConfig(kind: GuardrailConfig["kind"], overrides: Partial<GuardrailConfig> = {}): GuardrailConfig {
  return {
    id: kind,
    kind,
    stage: "input",
    piiEntityTypes: [],
    injectionThreshold: null,
    contentThresholds: {},
    failClosed: false,
    redact: false,
    modelPath: null,
    tokenizerPath: null,
    classifierUrl: null,
    classifierTimeoutMs: null,
    ...overrides,
  };
}
