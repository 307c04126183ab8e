import type { ProviderKind, RoutingRule, WorkspaceConfig } from "../config/types.ts";
import { noRoutingRule, type GatewayError } from "../dataplane/errors.ts";
import type { EndpointSpec } from "../endpoints/specs.ts";
import { routeCandidates, type Attempt } from "./candidates.ts";
import type { CooldownView } from "./cooldown.ts";
import { matchesAny } from "./glob.ts";

export type Route = { ok: true; rule: RoutingRule; attempts: Attempt[] } | { ok: false; error: GatewayError };

/** An endpoint spec, as far as routing reads it. */
export type RoutedEndpointSpec = Pick<EndpointSpec, "name" | "target">;

/** The first rule, by priority, that matches the model (a rule with no models matches all). */
export function findRoutingRule(config: WorkspaceConfig | undefined, model: string): RoutingRule | undefined {
  return config?.routingRules.find((r) => r.models.length === 0 || matchesAny(r.models, model));
}

/**
 * The first rule, by priority, that matches the model, and the attempts of the call in order
 * (routeCandidates). Each way it can fail is one of the spec's 503s; for a rule of one target,
 * exactly as before rules had several.
 */
export function resolveRoute(
  config: WorkspaceConfig | undefined,
  model: string,
  endpoint: RoutedEndpointSpec,
  choice: { random: () => number; cooldown?: CooldownView } = { random: Math.random },
): Route {
  const rule = findRoutingRule(config, model);
  if (!config || !rule) return { ok: false, error: noRoutingRule(model) };
  const serves = (kind: ProviderKind) => endpoint.target(kind) !== undefined;
  const candidates = routeCandidates(config, rule, model, { endpoint: endpoint.name, serves, ...choice });
  return candidates.ok ? { ok: true, rule, attempts: candidates.attempts } : candidates;
}
