import type { Logger } from "../../platform/logger.ts";
import type { GuardrailConfig } from "../config/types.ts";
import { guardrailLoading } from "../dataplane/errors.ts";
import { createHttpClassifier, type HttpClassifier } from "./plugins/http-classifier.ts";
import { loadOnnxClassifier, type OnnxPlugin } from "./plugins/onnx-classifier.ts";

export interface PluginVerdict {
  score?: number;
  categories?: Record<string, number>;
}

export interface Plugin {
  classify(text: string): Promise<PluginVerdict>;
}

/** The labels an ONNX prompt-injection model is expected to have, in logit order. */
const injectionLabels = ["SAFE", "INJECTION"];

/**
 * The plug-ins that guardrails name, made once per configuration and kept across reloads. An
 * ONNX model loads in the background; until it has, its guardrail answers "still loading". A
 * model that cannot load (no onnxruntime-node, a missing file) fails every check, which the
 * guardrail's fail mode then decides.
 */
export class PluginRegistry {
  readonly #logger: Logger;
  readonly #http = new Map<string, HttpClassifier>();
  readonly #onnx = new Map<string, { state: "loading" } | { state: "done"; plugin: OnnxPlugin }>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** The plug-in of a guardrail, or undefined when it uses the built-in detector. */
  for(guardrail: GuardrailConfig): Plugin | undefined {
    if (guardrail.classifierUrl) {
      const id = `${guardrail.classifierUrl} ${guardrail.classifierTimeoutMs ?? ""}`;
      let classifier = this.#http.get(id);
      if (!classifier) {
        classifier = createHttpClassifier({ url: guardrail.classifierUrl, timeoutMs: guardrail.classifierTimeoutMs ?? undefined });
        this.#http.set(id, classifier);
      }
      return classifier;
    }
    if (guardrail.modelPath && guardrail.tokenizerPath) {
      const { modelPath, tokenizerPath } = guardrail;
      const id = `${modelPath} ${tokenizerPath}`;
      if (!this.#onnx.has(id)) {
        this.#onnx.set(id, { state: "loading" });
        void loadOnnxClassifier({ modelPath, tokenizerPath, labels: injectionLabels, log: { warn: (m) => this.#logger.warn(m) } })
          .then((plugin) => this.#onnx.set(id, { state: "done", plugin }));
      }
      return {
        classify: async (text) => {
          const entry = this.#onnx.get(id);
          if (!entry || entry.state === "loading") throw guardrailLoading(guardrail.kind);
          if (!entry.plugin.available) throw new Error(entry.plugin.reason);
          return entry.plugin.classifier.classify(text);
        },
      };
    }
    return undefined;
  }
}
