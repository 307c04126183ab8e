import { Buffer } from "node:buffer";
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
import { detect, type DetectorBlock, type DetectorCheck } from "./detect.ts";
import { cacheKey, cacheScope, VerdictCache } from "./verdict-cache.ts";
import type { DetectorLoader, DetectorName } from "./detectors/loader.ts";
import type { CheckedOutput, GuardrailRequest, GuardrailStep, InputRedaction } from "./guardrail-step.ts";
import type { PiiDetector } from "./detectors/pii.ts";
import { redactAnswer, redactRequest } from "./redaction.ts";
import { StreamGuard } from "./stream-guard.ts";
import { parseAnswer } from "../usage/provider-usage.ts";
import { PluginRegistry, type PluginVerdict } from "./plugin-registry.ts";
import { extractedText, segmentsCapped } from "./text.ts";
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
  /** How much text past a streamed piece the output guardrails read before it goes out (stream-guard.ts). */
  streamWindowChars: number;
  /** Verdicts on caller texts kept (verdict-cache.ts); 0 keeps none. */
  cacheEntries: number;
}

/**
 * The gateway's guardrails: the workspace's enabled guardrails of the stage, in a fixed order,
 * each with the built-in detector or its plug-in. The first that blocks answers 422. A PII
 * guardrail that redacts does so first, and the others read the redacted text.
 */
export function createGuardrailStep(options: GuardrailStepOptions): GuardrailStep {
  const plugins = options.plugins ?? new PluginRegistry(options.logger);

  const cache = new VerdictCache(options.cacheEntries);

  /**
   * One guardrail's check of a request's texts, one by one, its fail mode applied: throws its
   * block, or says how it went. A built-in detector's verdict on a cacheable text is kept; a
   * plug-in reads the texts joined, in one call. PII reads every text, and its refusal names
   * every type found. At once when every verdict is at hand (kept, or from a detector on the event
   * loop); a promise only from the first text that must wait (a worker, a plug-in): a call checks
   * its texts with each guardrail of both stages, and an async function for each was a promise and
   * a suspended frame apiece (docs/performance.md, "Allocation per call").
   */
  function check(workspaceId: string, guardrail: GuardrailConfig, stage: GuardrailStage, texts: Texts): CheckVerdict | Promise<CheckVerdict> {
    const plugin = plugins.for(guardrail) !== undefined;
    const segments = plugin ? [texts.segments.join("\n")] : texts.segments;
    let failed = false;
    const piiTypes: string[] = [];
    const keys = texts.cacheable && !plugin ? keysOf(texts) : undefined;
    const scope = keys ? cacheScope(workspaceId, guardrail) : "";
    // The operator's own text (the system prompt) meets the injection rules only: the classifier
    // learnt attacks from users' words and flags prompts that defend a secret (docs/guardrails.md).
    const operator = guardrail.kind === "prompt_injection" && !plugin ? (texts.operator ?? 0) : 0;
    const operatorScope = operator > 0 && keys ? cacheScope(workspaceId, guardrail, true) : "";

    /** Segment i's detector answer, kept when it may be; a block of a type other than PII throws. */
    const found = (i: number, answer: DetectorBlock | undefined | typeof failedOpen): void => {
      if (answer === failedOpen) {
        failed = true;
        return;
      }
      const key = keys?.[i];
      if (key !== undefined) cache.set(i < operator ? operatorScope : scope, key, answer ?? null);
      blocked(answer);
    };
    const blocked = (block: DetectorBlock | null | undefined): void => {
      if (!block) return;
      if (!block.entityTypes) throw guardrailBlocked(guardrail.kind, stage, block.reason);
      piiTypes.push(...block.entityTypes);
    };
    const from = (first: number): CheckVerdict | Promise<CheckVerdict> => {
      for (let i = first; i < segments.length; i++) {
        const segment = segments[i]!;
        if (segment === "") continue;
        const own = i < operator;
        const key = keys?.[i];
        const kept = key === undefined ? undefined : cache.get(own ? operatorScope : scope, key);
        if (kept !== undefined) {
          blocked(kept);
          continue;
        }
        let answer: ReturnType<typeof evaluate> | typeof failedOpen;
        try {
          answer = evaluate(guardrail, segment, own);
        } catch (err) {
          answer = failure(guardrail, stage, err);
        }
        if (answer instanceof Promise) {
          return answer
            .catch((err: unknown): typeof failedOpen => failure(guardrail, stage, err))
            .then((later) => {
              found(i, later);
              return from(i + 1);
            });
        }
        found(i, answer);
      }
      if (piiTypes.length > 0) throw guardrailBlocked(guardrail.kind, stage, piiReason(piiTypes));
      if (failed) return "error-open";
      // What lies past the cap was not read: a gap in the check, as a detector error is.
      if (texts.truncated && guardrail.failClosed) throw guardrailBlocked(guardrail.kind, stage, uncheckedReason);
      return texts.truncated ? "truncated-open" : "pass";
    };
    return from(0);
  }

  /** `work`, with a detector's failure decided by the guardrail's fail mode: blocked, or {@link failedOpen}. */
  async function failSafe<T>(guardrail: GuardrailConfig, stage: GuardrailStage, work: () => Promise<T>): Promise<T | typeof failedOpen> {
    try {
      return await work();
    } catch (err) {
      return failure(guardrail, stage, err);
    }
  }

  /** A detector's failure, decided by the guardrail's fail mode: thrown as its block, or {@link failedOpen}. */
  function failure(guardrail: GuardrailConfig, stage: GuardrailStage, err: unknown): typeof failedOpen {
    if (err instanceof GatewayError) throw err;
    // A full queue is the gateway's capacity; a job past its deadline is the detector's failure.
    if (err instanceof WorkerQueueFull) throw gatewayAtCapacity();
    options.logger.warn({ err, guardrail: guardrail.id, kind: guardrail.kind }, "guardrail detector failed");
    if (guardrail.failClosed) throw guardrailBlocked(guardrail.kind, stage, uncheckedReason);
    return failedOpen;
  }

  /**
   * Every guardrail of the stage on the texts, in order; `done` gives the verdict of one that has
   * already run. At once when every check answers at once (check, above).
   */
  function run(
    request: GuardrailRequest,
    stage: GuardrailStage,
    texts: () => Texts,
    done?: (guardrail: GuardrailConfig) => string | undefined,
  ): string | undefined | Promise<string | undefined> {
    const guardrails = stageOf(request, stage);
    if (guardrails.length === 0) return undefined;
    const read = texts();
    const verdicts: string[] = [];
    const from = (first: number): string | Promise<string> => {
      for (let g = first; g < guardrails.length; g++) {
        const guardrail = guardrails[g]!;
        const verdict = done?.(guardrail) ?? check(request.key.workspaceId, guardrail, stage, read);
        if (verdict instanceof Promise) {
          return verdict.then((later) => {
            verdicts.push(`${guardrail.kind}:${later}`);
            return from(g + 1);
          });
        }
        verdicts.push(`${guardrail.kind}:${verdict}`);
      }
      return verdicts.join(",");
    };
    return from(0);
  }

  /** A text's block, or none: at once from a detector on the event loop, as a promise from a worker or a plug-in. */
  function evaluate(guardrail: GuardrailConfig, text: string, operator = false): DetectorBlock | undefined | Promise<DetectorBlock | undefined> {
    const plugin = plugins.for(guardrail);
    if (plugin) {
      return plugin.classify(text).then((verdict) => {
        const reason = reasonFromPlugin(guardrail, verdict);
        return reason === undefined ? undefined : { reason };
      });
    }
    if (options.loader.stateOf(detectorOf[guardrail.kind]) === "loading") throw guardrailLoading(guardrail.kind);
    const check = checkOf(guardrail, operator);
    if (!options.pool || text.length <= INLINE_TEXT_CHARS) return detect(options.loader, check, text);
    return options.pool.run({ kind: "check", check, text }).then((block) => block ?? undefined);
  }

  /** The built-in PII detector, for redaction. */
  function pii(): PiiDetector {
    if (options.loader.stateOf("pii") === "loading") throw guardrailLoading("pii");
    const detector = options.loader.pii;
    if (!detector) throw new Error("the pii detector failed to load");
    return detector;
  }

  /** The redacting input guardrail on the request's caller text, its fail mode applied. */
  async function redactInput(request: GuardrailRequest & { body: Record<string, unknown>; raw: Buffer }, guardrail: GuardrailConfig): Promise<InputRedaction> {
    const redacted = await failSafe(guardrail, "input", async () => {
      // A body a worker parsed is whole only in its raw bytes: the worker redacts those.
      if (options.pool && extractedText(request.body)) {
        const job = { kind: "redact", raw: request.raw, endpoint: request.spec.name, entityTypes: guardrail.piiEntityTypes } as const;
        const { raw, counts } = await options.pool.run(job, movable(request.raw)).catch((err: unknown) => {
          // The body went to the worker without a copy: if it did not come back, the call
          // cannot go on, whatever the fail mode (503, retry).
          if (request.raw.length === 0) throw gatewayAtCapacity();
          throw err;
        });
        return { raw: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), counts: counts ?? undefined };
      }
      const counts = redactRequest(pii(), request.spec, request.body, guardrail.piiEntityTypes);
      return { raw: counts ? Buffer.from(JSON.stringify(request.body)) : request.raw, counts };
    });
    if (redacted === failedOpen) return { raw: request.raw, verdict: "error-open" };
    return { raw: redacted.raw, counts: redacted.counts, verdict: redacted.counts ? "redacted" : "pass" };
  }

  /** The output stage when its PII guardrail redacts: redaction first, then the stage on what it left. */
  async function checkRedactedOutput(request: GuardrailRequest & { body: Buffer; answer: unknown }, guardrail: GuardrailConfig): Promise<CheckedOutput> {
    // A copy of its own: redaction rewrites it in place, and a redaction that fails open must
    // leave the caller's answer (request.answer) whole.
    const answer = parseAnswer(request.body);
    const counts = await failSafe(guardrail, "output", async () => redactAnswer(pii(), request.spec, answer, guardrail.piiEntityTypes));
    const redacted = counts && counts !== failedOpen ? { body: Buffer.from(JSON.stringify(answer)), answer, counts } : undefined;
    const redaction = counts === failedOpen ? "error-open" : counts ? "redacted" : "pass";
    const read = redacted ? redacted.answer : request.answer;
    const verdict = await run(request, "output", () => capped(read === undefined ? [] : request.spec.outputText(read)), (g) => (g === guardrail ? redaction : undefined));
    return { verdict, redacted };
  }

  const capped = (parts: string[]) => segmentsCapped(parts, options.maxTextBytes);
  return {
    redactInput(request) {
      const guardrail = redactingOf(stageOf(request, "input"));
      return guardrail ? redactInput(request, guardrail) : undefined;
    },
    checkInput: (request) =>
      run(
        request,
        "input",
        () => {
          // A large body was read by a worker, which joined its texts and cut them to the same cap.
          const extracted = extractedText(request.body);
          if (extracted) return { segments: [extracted.capped.text], truncated: extracted.capped.truncated };
          // Caller texts come again, with every turn of a conversation: their verdicts are kept.
          return { ...capped(request.spec.inputText(request.body)), cacheable: true, operator: request.spec.operatorParts(request.body) };
        },
        (guardrail) => (guardrail.redact ? (request.redaction ?? "pass") : undefined),
      ),
    checkOutput(request) {
      const guardrails = stageOf(request, "output");
      const guardrail = redactingOf(guardrails);
      if (guardrail) return checkRedactedOutput(request, guardrail);
      const verdict = run(request, "output", () => capped(request.answer === undefined ? [] : request.spec.outputText(request.answer)));
      return verdict instanceof Promise ? verdict.then((later) => ({ verdict: later })) : { verdict };
    },
    streamGuard(request) {
      const guardrails = stageOf(request, "output");
      if (guardrails.length === 0) return undefined;
      return new StreamGuard({
        guardrails,
        windowChars: options.streamWindowChars,
        pii,
        check: async (guardrail, text) => {
          const verdict = await check(request.key.workspaceId, guardrail, "output", { segments: [text], truncated: false });
          return verdict === "pass" ? "pass" : "error-open";
        },
      });
    },
  };
}

/** The texts a guardrail reads, one by one, and whether the cap left some unread. */
interface Texts {
  segments: readonly string[];
  truncated: boolean;
  /** Whether verdicts on them are kept (verdict-cache.ts). */
  cacheable?: boolean;
  /** How many of the first segments are the operator's own text (the system prompt, instructions). */
  operator?: number;
  /** The segments' cache keys, made by the stage's first guardrail for all of them. */
  keys?: string[];
}

function keysOf(texts: Texts): string[] {
  return (texts.keys ??= texts.segments.map(cacheKey));
}

/** How one guardrail's check went, when it let the content through. */
type CheckVerdict = "pass" | "error-open" | "truncated-open";

/** A detector failed, and the guardrail lets the content through. */
const failedOpen = Symbol("failed open");

/** The stage's guardrails; the snapshot keeps them in the order they run. */
function stageOf(request: GuardrailRequest, stage: GuardrailStage): readonly GuardrailConfig[] {
  return request.config?.guardrails[stage] ?? [];
}

/** The stage's PII guardrail, when it redacts. */
function redactingOf(guardrails: readonly GuardrailConfig[]): GuardrailConfig | undefined {
  return guardrails.find((g) => g.kind === "pii" && g.redact);
}

/** A Buffer that is the whole of its memory can be moved to a worker rather than copied. */
function movable(raw: Buffer): ArrayBuffer[] {
  return raw.byteOffset === 0 && raw.buffer.byteLength === raw.length && raw.buffer instanceof ArrayBuffer ? [raw.buffer] : [];
}

function checkOf(guardrail: GuardrailConfig, operator: boolean): DetectorCheck {
  switch (guardrail.kind) {
    case "pii":
      return { kind: "pii", entityTypes: guardrail.piiEntityTypes };
    case "prompt_injection":
      return { kind: "prompt_injection", threshold: guardrail.injectionThreshold, rulesOnly: operator };
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
