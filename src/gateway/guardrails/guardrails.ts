import type { Logger } from "../../platform/logger.ts";
import type { GuardrailConfig, GuardrailStage } from "../config/types.ts";
import {
  GatewayError,
  guardrailBlocked,
  guardrailLoading,
  piiReason,
  promptInjectionReason,
  toxicContentReason,
} from "../dataplane/errors.ts";
import { defaultHighRiskPii } from "./catalog.ts";
import type { ContentCategory } from "./detectors/content-safety.ts";
import type { DetectorLoader, DetectorName } from "./detectors/loader.ts";
import type { PiiEntityType } from "./detectors/pii.ts";
import type { GuardrailRequest, GuardrailStep } from "./guardrail-step.ts";
import { PluginRegistry, type PluginVerdict } from "./plugin-registry.ts";
import { imagesInputText, messagesInputText, outputText, responsesInputText } from "./text.ts";

const detectorOf: Record<GuardrailConfig["kind"], DetectorName> = { pii: "pii", prompt_injection: "injection", content_safety: "content" };

/** A check that could not run, under fail-closed: it names neither the guardrail nor the stage. */
const uncheckedReason = "The content could not be checked, and checking it is required.";

export interface GuardrailStepOptions {
  loader: DetectorLoader;
  logger: Logger;
  plugins?: PluginRegistry;
}

/**
 * The gateway's guardrails: the workspace's enabled guardrails of the stage, in a fixed order,
 * each with the built-in detector or its plug-in. The first that blocks answers 422.
 */
export function createGuardrailStep(options: GuardrailStepOptions): GuardrailStep {
  const plugins = options.plugins ?? new PluginRegistry(options.logger);

  async function run(request: GuardrailRequest, stage: GuardrailStage, texts: () => string[]): Promise<string | undefined> {
    // The snapshot keeps them in the order they run.
    const guardrails = (request.config?.guardrails ?? []).filter((g) => g.stage === stage);
    if (guardrails.length === 0) return undefined;
    const text = texts().join("\n");
    const verdicts: string[] = [];
    for (const guardrail of guardrails) {
      let reason: string | undefined;
      try {
        reason = await evaluate(guardrail, text);
      } catch (err) {
        if (err instanceof GatewayError) throw err;
        options.logger.warn({ err, guardrail: guardrail.id, kind: guardrail.kind }, "guardrail detector failed");
        if (guardrail.failClosed) throw guardrailBlocked(guardrail.kind, stage, uncheckedReason);
        verdicts.push(`${guardrail.kind}:error-open`);
        continue;
      }
      if (reason) throw guardrailBlocked(guardrail.kind, stage, reason);
      verdicts.push(`${guardrail.kind}:pass`);
    }
    return verdicts.join(",");
  }

  async function evaluate(guardrail: GuardrailConfig, text: string): Promise<string | undefined> {
    const plugin = plugins.for(guardrail);
    if (plugin) return reasonFromPlugin(guardrail, await plugin.classify(text));
    if (options.loader.stateOf(detectorOf[guardrail.kind]) === "loading") throw guardrailLoading(guardrail.kind);
    switch (guardrail.kind) {
      case "pii": {
        const detector = ready(options.loader.pii, guardrail);
        const entityTypes = (guardrail.piiEntityTypes.length > 0 ? guardrail.piiEntityTypes : defaultHighRiskPii) as PiiEntityType[];
        const findings = detector.detect(text, { entityTypes });
        return findings.length > 0 ? piiReason(findings.map((f) => f.entityType)) : undefined;
      }
      case "prompt_injection": {
        const detector = ready(options.loader.injection, guardrail);
        const score = detector.score(text);
        return score >= (guardrail.injectionThreshold ?? detector.threshold) ? promptInjectionReason(score) : undefined;
      }
      case "content_safety": {
        const detector = ready(options.loader.content, guardrail);
        const thresholds = { ...detector.thresholds, ...guardrail.contentThresholds } as Record<ContentCategory, number>;
        const [worst] = detector.flagged(text, thresholds);
        return worst ? toxicContentReason(worst.category, worst.score, thresholds[worst.category]) : undefined;
      }
    }
  }

  return {
    checkInput: (request) =>
      run(request, "input", () =>
        request.endpoint === "messages"
          ? messagesInputText(request.body)
          : request.endpoint === "responses"
            ? responsesInputText(request.body)
            : imagesInputText(request.body),
      ),
    checkOutput: (request) => run(request, "output", () => outputText(request.body)),
  };
}

/** A detector that failed to load is an error, which the guardrail's fail mode decides. */
function ready<T>(detector: T | undefined, guardrail: GuardrailConfig): T {
  if (!detector) throw new Error(`the ${guardrail.kind} detector failed to load`);
  return detector;
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
