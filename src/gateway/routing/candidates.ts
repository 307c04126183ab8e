import type { ProviderConfig, ProviderKind, RoutingRule, RoutingTarget, WorkspaceConfig } from "../config/types.ts";
import {
  noProviderApiKey,
  providerNotConfigured,
  routingRuleModelBasedEmbeddings,
  routingRuleWrongProvider,
  type GatewayError,
} from "../dataplane/errors.ts";
import type { EndpointName } from "../endpoints/specs.ts";
import type { CooldownView } from "./cooldown.ts";

/** One attempt of a call: the provider, and the model name it is sent. */
export interface Attempt {
  provider: ProviderConfig;
  upstreamModel: string;
  /** The rule's target it comes from (weight included). */
  target: RoutingTarget;
}

export interface CandidateOptions {
  /** The call's endpoint: embeddings route only by rules without models, and the errors name it. */
  endpoint: EndpointName;
  /** Whether a provider of this kind can serve the call (for a spec: `(kind) => spec.target(kind) !== undefined`). */
  serves: (kind: ProviderKind) => boolean;
  /** In [0, 1), as Math.random: draws a weighted rule's first attempt. */
  random: () => number;
  /** The providers to skip for now; absent: none. */
  cooldown?: CooldownView;
}

export type Candidates = { ok: true; attempts: Attempt[] } | { ok: false; error: GatewayError };

const nothingCools: CooldownView = { isCooling: () => false };

/**
 * The ordered attempts of one call routed by `rule` (already matched to the call's model).
 *
 * Targets that cannot be called are left out: their provider is missing, has no API key, or cannot
 * serve the endpoint (and embeddings are never routed by a rule that lists models). When none is
 * left, the answer is the error that the rule's first target alone would give, so that a rule of
 * one target answers exactly as resolveRoute always has.
 *
 * Of the others, those whose provider is cooling down are left out too, unless all of them are:
 * then they are all tried, in the same order (trying beats failing at once). The order: with no
 * weight on any target of the rule, the targets' own. With weights, the first attempt is drawn
 * among the targets weighted above 0, in proportion to their weights; the rest follow in their
 * own order. If no target above 0 is left, the targets' own order.
 */
export function routeCandidates(config: WorkspaceConfig, rule: RoutingRule, model: string, options: CandidateOptions): Candidates {
  const callable: Attempt[] = [];
  for (const target of rule.targets) {
    if (targetError(config, rule, target, options) !== undefined) continue;
    const provider = config.providersByName.get(target.providerName)!;
    callable.push({ provider, upstreamModel: target.upstreamModel ?? model, target });
  }
  if (callable.length === 0) {
    const first = rule.targets[0]!;
    return { ok: false, error: targetError(config, rule, first, options) ?? providerNotConfigured(first.providerName) };
  }

  const cooldown = options.cooldown ?? nothingCools;
  const warm = callable.filter((attempt) => !cooldown.isCooling(attempt.provider.id));
  const pool = warm.length > 0 ? warm : callable;
  if (!rule.targets.some((target) => target.weight !== null)) return { ok: true, attempts: pool };

  const drawn = drawByWeight(pool, options.random);
  if (drawn === undefined) return { ok: true, attempts: pool };
  return { ok: true, attempts: [pool[drawn]!, ...pool.filter((_, i) => i !== drawn)] };
}

/**
 * Why a target cannot serve the call, as resolveRoute has always answered for a rule's target, in
 * the same order; undefined when it can.
 */
export function targetError(config: WorkspaceConfig, rule: RoutingRule, target: RoutingTarget, options: Pick<CandidateOptions, "endpoint" | "serves">): GatewayError | undefined {
  const provider = config.providersByName.get(target.providerName);
  if (!provider) return providerNotConfigured(target.providerName);
  if (options.endpoint === "embeddings" && rule.models.length > 0) return routingRuleModelBasedEmbeddings(provider.name);
  if (!options.serves(provider.kind)) return routingRuleWrongProvider(provider.name, provider.kind, options.endpoint);
  if (provider.apiKey === null) return noProviderApiKey(provider.name);
  return undefined;
}

/** The index of the attempt drawn in proportion to the weights above 0, or undefined when there is none. */
function drawByWeight(pool: readonly Attempt[], random: () => number): number | undefined {
  let total = 0;
  for (const attempt of pool) total += Math.max(attempt.target.weight ?? 0, 0);
  if (total <= 0) return undefined;
  let point = random() * total;
  let last: number | undefined;
  for (let i = 0; i < pool.length; i++) {
    const weight = pool[i]!.target.weight ?? 0;
    if (weight <= 0) continue;
    last = i;
    if (point < weight) return i;
    point -= weight;
  }
  // Rounding, or a random() of 1: the last weighted one.
  return last;
}
