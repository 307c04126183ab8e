import type { ProviderConfig, RoutingRule, WorkspaceConfig } from "../config/types.ts";
import {
  noProviderApiKey,
  noRoutingRule,
  providerNotConfigured,
  routingRuleModelBasedEmbeddings,
  routingRuleWrongFamily,
  routingRuleWrongProvider,
  type GatewayError,
} from "../dataplane/errors.ts";
import { supportsEndpoint, type UpstreamEndpoint } from "../providers/upstream.ts";
import { matchesAny } from "./glob.ts";

export type Route =
  | { ok: true; provider: ProviderConfig; rule: RoutingRule; upstreamModel: string }
  | { ok: false; error: GatewayError };

/**
 * The first rule, by priority, that matches the model (a rule with no models matches all), and
 * whether its target can serve the endpoint. Each way it can fail is one of the spec's 503s.
 */
export function resolveRoute(config: WorkspaceConfig | undefined, model: string, endpoint: UpstreamEndpoint): Route {
  const rule = config?.routingRules.find((r) => r.models.length === 0 || matchesAny(r.models, model));
  if (!config || !rule) return { ok: false, error: noRoutingRule(model) };
  const provider = config.providersByName.get(rule.providerName);
  if (!provider) return { ok: false, error: providerNotConfigured(rule.providerName) };
  if (endpoint === "embeddings" && rule.models.length > 0) {
    return { ok: false, error: routingRuleModelBasedEmbeddings(provider.name) };
  }
  if (!supportsEndpoint(provider.kind, endpoint)) {
    const error = endpoint === "embeddings" || endpoint === "images"
      ? routingRuleWrongProvider(provider.name, provider.kind, endpoint)
      : routingRuleWrongFamily(provider.name, provider.kind, endpoint);
    return { ok: false, error };
  }
  if (provider.apiKey === null) return { ok: false, error: noProviderApiKey(provider.name) };
  return { ok: true, provider, rule, upstreamModel: rule.upstreamModel ?? model };
}
