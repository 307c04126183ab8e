import type { Logger } from "../../platform/logger.ts";
import type { GuardrailConfig, GuardrailStage } from "../config/types.ts";
import {
  GatewayError,
  gatewayAtCapacity,
  guardrailBlocked,
  guardrailLoading,
  piiReason,
  promptInjectionReason,
  toxicContentReason,
} from "../dataplane/errors.ts";
import { defaultHighRiskPii } from "./catalog.ts";
import { detect, type DetectorCheck } from "./detect.ts";
import type { DetectorLoader, DetectorName } from "./detectors/loader.ts";
import type { GuardrailRequest, GuardrailStep } from "./guardrail-step.ts";
import { PluginRegistry, type PluginVerdict } from "./plugin-registry.ts";
import { answerBytesText, extractedText, joinCapped } from "./text.ts";
import { WorkerQueueFull, type WorkerPool } from "./worker-pool.ts";

const detectorOf: Record<GuardrailConfig["kind"], DetectorName> = { pii: "pii", prompt_injection: "injection", content_safety: "content" };

/**
 * Checked on the event loop up to this length. On the worst text found, the slowest detector reads
 * about 0.6 characters per microsecond, so a check here holds the loop some 7 ms at most; ordinary
 * prompts of a few KB skip the worker's round trip (about 0.15 ms a check, measured).
 */
export const INLINE_TEXT_CHARS = 4096;

/** A check that could not run, under fail-closed: it names neither the guardrail nor the stage. */
const uncheckedReason = "The content could not be checked, and checking it is required.";

export interface GuardrailStepOptions {
  loader: DetectorLoader;
  logger: Logger;
  plugins?: PluginRegistry;
  /**
   * The most text, in UTF-8 bytes, that a guardrail reads for one request. Text past it is not
   * read: the part before it is checked as usual, and the rest counts as content that could not
   * be checked, which the guardrail's fail mode decides (see docs/guardrails.md).
   */
  maxTextBytes: number;
  /** Workers for texts longer than {@link INLINE_TEXT_CHARS}; without them, every check runs on the event loop. */
  pool?: WorkerPool;
}

/**
 * The gateway's guardrails: the workspace's enabled guardrails of the stage, in a fixed order,
 * each with the built-in detector or its plug-in. The first that blocks answers 422.
 */
export function createGuardrailStep(options: GuardrailStepOptions): GuardrailStep {
  const plugins = options.plugins ?? new PluginRegistry(options.logger);

  async function run(
    request: GuardrailRequest,
    stage: GuardrailStage,
    texts: () => { text: string; truncated: boolean },
  ): Promise<string | undefined> {
    // The snapshot keeps them in the order they run.
    const guardrails = (request.config?.guardrails ?? []).filter((g) => g.stage === stage);
    if (guardrails.length === 0) return undefined;
    const { text, truncated } = texts();
    const verdicts: string[] = [];
    for (const guardrail of guardrails) {
      let reason: string | undefined;
      try {
        reason = await evaluate(guardrail, text);
      } catch (err) {
        if (err instanceof GatewayError) throw err;
        if (err instanceof WorkerQueueFull) throw gatewayAtCapacity();
        options.logger.warn({ err, guardrail: guardrail.id, kind: guardrail.kind }, "guardrail detector failed");
        if (guardrail.failClosed) throw guardrailBlocked(guardrail.kind, stage, uncheckedReason);
        verdicts.push(`${guardrail.kind}:error-open`);
        continue;
      }
      if (reason) throw guardrailBlocked(guardrail.kind, stage, reason);
      // What lies past the cap was not read: a gap in the check, as a detector error is.
      if (truncated && guardrail.failClosed) throw guardrailBlocked(guardrail.kind, stage, uncheckedReason);
      verdicts.push(truncated ? `${guardrail.kind}:truncated-open` : `${guardrail.kind}:pass`);
    }
    return verdicts.join(",");
  }

  async function evaluate(guardrail: GuardrailConfig, text: string): Promise<string | undefined> {
    const plugin = plugins.for(guardrail);
    if (plugin) return reasonFromPlugin(guardrail, await plugin.classify(text));
    if (options.loader.stateOf(detectorOf[guardrail.kind]) === "loading") throw guardrailLoading(guardrail.kind);
    const check = checkOf(guardrail);
    if (!options.pool || text.length <= INLINE_TEXT_CHARS) return detect(options.loader, check, text);
    return (await options.pool.run({ kind: "check", check, text })) ?? undefined;
  }

  const capped = (parts: string[]) => joinCapped(parts, options.maxTextBytes);
  return {
    checkInput: (request) =>
      run(request, "input", () => {
        // A large body was read by a worker, which cut its text to the same cap.
        const extracted = extractedText(request.body);
        if (extracted) return extracted.capped;
        return capped(request.spec.inputText(request.body));
      }),
    checkOutput: (request) => run(request, "output", () => capped(answerBytesText(request.spec, request.body))),
  };
}

function checkOf(guardrail: GuardrailConfig): DetectorCheck {
  switch (guardrail.kind) {
    case "pii":
      return { kind: "pii", entityTypes: guardrail.piiEntityTypes };
    case "prompt_injection":
      return { kind: "prompt_injection", threshold: guardrail.injectionThreshold };
    case "content_safety":
      return { kind: "content_safety", thresholds: guardrail.contentThresholds };
  }
}

function reasonFromPlugin(guardrail: GuardrailConfig, verdict: PluginVerdict): string | undefined {
  switch (guardrail.kind) {
    case "pii": {
      const wanted: readonly string[] = guardrail.piiEntityTypes.length > 0 ? guardrail.piiEntityTypes : defaultHighRiskPii;
      const found = Object.entries(verdict.categories ?? {}).filter(([type, score]) => wanted.includes(type) && score >= 0.5);
      return found.length > 0 ? piiReason(found.map(([type]) => type)) : undefined;
    }
    case "prompt_injection": {
      const score = verdict.score ?? 0;
      return score >= (guardrail.injectionThreshold ?? 0.5) ? promptInjectionReason(score) : undefined;
    }
    case "content_safety": {
      const over = Object.entries(verdict.categories ?? {})
        .map(([category, score]) => ({ category, score, threshold: guardrail.contentThresholds[category] ?? 0.5 }))
        .filter((c) => c.score >= c.threshold)
        .sort((a, b) => b.score - a.score || a.category.localeCompare(b.category));
      const worst = over[0];
      return worst ? toxicContentReason(worst.category, worst.score, worst.threshold) : undefined;
    }
  }
}
