import type { MikroORM } from "@mikro-orm/postgresql";
import type { Logger } from "../../platform/logger.ts";
import {
  AccessRuleEntity,
  GatewayKeyEntity,
  GatewaySettingsEntity,
  GatewayWorkspaceSettingsEntity,
  GuardrailEntity,
  ModelPriceEntity,
  ProviderEntity,
  RoutingRuleEntity,
  UsageLimitEntity,
  type RoutingRuleRow,
  type UsageLimitRow,
} from "./entities.ts";
import type { LimitPeriod, LimitScope, LimitUnit, UsageLimit } from "../limits/types.ts";
import { bundledPriceBook, PriceBook, type PriceOverride } from "../cost/price-book.ts";
import type { SecretBox } from "./secrets.ts";
import { guardrailOrder } from "./types.ts";
import type {
  GatewayKey,
  GatewaySnapshot,
  GuardrailKind,
  GuardrailStage,
  ProviderConfig,
  ProviderKind,
  RoutingTarget,
  WorkspaceConfig,
} from "./types.ts";

const providerKinds: Record<string, ProviderKind> = {
  ANTHROPIC: "anthropic",
  OPENAI: "openai",
  AZURE_OPENAI: "azure_openai",
  OPENAI_COMPATIBLE: "openai_compatible",
};

/** A stored usage limit as the counters take it. */
export function usageLimitOf(row: UsageLimitRow): UsageLimit {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    scope: row.scope.toLowerCase() as LimitScope,
    subjectId: row.subjectId,
    period: row.period.toLowerCase() as LimitPeriod,
    unit: row.unit.toLowerCase() as LimitUnit,
    tokenLimit: Number(row.tokenLimit),
  };
}

export interface SnapshotSources {
  orm: MikroORM;
  secrets: SecretBox;
  defaultMaxInFlight: number;
  logger: Logger;
}

/** Reads the whole gateway configuration, for every workspace, into one immutable snapshot. */
export async function loadSnapshot(sources: SnapshotSources, version: number): Promise<GatewaySnapshot> {
  const em = sources.orm.em.fork();
  const [providers, rules, keys, accessRules, settings, guardrails, usageLimits, workspaceSettings, prices] = await Promise.all([
    em.find(ProviderEntity, {}),
    em.find(RoutingRuleEntity, {}, { orderBy: [{ priority: "asc" }, { dateCreated: "asc" }, { id: "asc" }] }),
    em.find(GatewayKeyEntity, {}),
    em.find(AccessRuleEntity, {}),
    em.findOne(GatewaySettingsEntity, { id: 1 }),
    em.find(GuardrailEntity, { enabled: true }),
    em.find(UsageLimitEntity, {}),
    em.find(GatewayWorkspaceSettingsEntity, { inferencePipelineId: { $ne: null } }),
    em.find(ModelPriceEntity, {}),
  ]);

  const workspaces = new Map<string, WorkspaceConfig>();
  const workspace = (id: string): WorkspaceConfig => {
    let config = workspaces.get(id);
    if (!config) {
      config = {
        workspaceId: id,
        providersByName: new Map(),
        routingRules: [],
        blockedModels: [],
        userAllowLists: new Map(),
        groupAllowLists: new Map(),
        guardrails: { input: [], output: [] },
        usageLimits: [],
        prices: bundledPriceBook,
      };
      workspaces.set(id, config);
    }
    return config;
  };

  for (const row of providers) {
    const provider: ProviderConfig = {
      id: row.id,
      workspaceId: row.workspaceId,
      name: row.name,
      kind: providerKinds[row.kind] ?? "openai",
      baseUrl: row.baseUrl,
      apiKey: openKey(sources, row.name, row.apiKeyCiphertext),
      connectTimeoutMs: row.connectTimeoutMs,
      headersTimeoutMs: row.headersTimeoutMs,
      bodyTimeoutMs: row.bodyTimeoutMs,
      maxInFlight: row.maxInFlight,
      apiVersion: row.apiVersion ?? null,
    };
    workspace(row.workspaceId).providersByName.set(provider.name, provider);
  }
  for (const row of rules) {
    workspace(row.workspaceId).routingRules.push({
      id: row.id,
      workspaceId: row.workspaceId,
      priority: row.priority,
      models: row.models,
      targets: routingTargetsOf(row),
    });
  }

  for (const row of guardrails) {
    const stage = row.stage.toLowerCase() as GuardrailStage;
    workspace(row.workspaceId).guardrails[stage].push({
      id: row.id,
      kind: row.kind.toLowerCase() as GuardrailKind,
      stage,
      piiEntityTypes: row.piiEntityTypes,
      injectionThreshold: row.injectionThreshold == null ? null : Number(row.injectionThreshold),
      contentThresholds: row.contentThresholds,
      failClosed: row.onError === "FAIL_CLOSED",
      redact: row.action === "REDACT",
      modelPath: row.modelPath ?? null,
      tokenizerPath: row.tokenizerPath ?? null,
      classifierUrl: row.classifierUrl ?? null,
      classifierTimeoutMs: row.classifierTimeoutMs ?? null,
    });
  }
  for (const row of usageLimits) workspace(row.workspaceId).usageLimits.push(usageLimitOf(row));
  const overrides = new Map<string, PriceOverride[]>();
  for (const row of prices) {
    const price = { input: row.inputMicros, output: row.outputMicros, cachedInput: row.cachedInputMicros ?? row.inputMicros };
    overrides.set(row.workspaceId, [...(overrides.get(row.workspaceId) ?? []), { providerName: row.providerName ?? null, model: row.model, price }]);
  }
  for (const [workspaceId, list] of overrides) workspace(workspaceId).prices = new PriceBook(list);

  for (const config of workspaces.values()) {
    for (const stage of [config.guardrails.input, config.guardrails.output]) stage.sort((a, b) => guardrailOrder.indexOf(a.kind) - guardrailOrder.indexOf(b.kind));
  }

  const keyAllowLists = new Map<string, string[]>();
  for (const rule of accessRules) {
    const config = workspace(rule.workspaceId);
    if (rule.effect === "BLOCK") {
      config.blockedModels.push(...rule.models);
    } else if (rule.subjectId) {
      const lists = rule.subject === "KEY" ? keyAllowLists : rule.subject === "USER" ? config.userAllowLists : config.groupAllowLists;
      // Several allow rules on one subject add up.
      lists.set(rule.subjectId, [...(lists.get(rule.subjectId) ?? []), ...rule.models]);
    }
  }

  // A key that names no pipeline writes to its workspace's, if that names one.
  const defaultPipelines = new Map(workspaceSettings.map((row) => [row.workspaceId, row.inferencePipelineId ?? null]));
  const keysByHash = new Map<string, GatewayKey>();
  for (const row of keys) {
    keysByHash.set(row.keyHash, {
      id: row.id,
      workspaceId: row.workspaceId,
      name: row.name ?? null,
      userId: row.userId ?? null,
      groupIds: row.groupIds,
      disabled: row.disabled,
      allowedModels: keyAllowLists.get(row.id) ?? null,
      inferencePipelineId: row.inferencePipelineId ?? defaultPipelines.get(row.workspaceId) ?? null,
      serverTiming: row.serverTiming,
    });
  }

  return {
    version,
    keysByHash,
    workspaces,
    settings: { maxInFlight: settings?.maxInFlight ?? sources.defaultMaxInFlight },
  };
}

/** A rule's targets as stored; the one-target columns stand in should the list be empty (it cannot be: a check says so). */
function routingTargetsOf(row: RoutingRuleRow): RoutingTarget[] {
  const stored = Array.isArray(row.targets) ? row.targets : [];
  if (stored.length === 0) return [{ providerName: row.providerName, upstreamModel: row.upstreamModel ?? null, weight: null }];
  return stored.map((target) => ({
    providerName: target.providerName,
    upstreamModel: target.upstreamModel ?? null,
    weight: target.weight ?? null,
  }));
}

function openKey(sources: SnapshotSources, providerName: string, sealed: Uint8Array | null | undefined): string | null {
  if (!sealed) return null;
  try {
    return sources.secrets.open(sealed);
  } catch (err) {
    // A key sealed under another master key: the provider answers "no API key is configured".
    sources.logger.error({ err, provider: providerName }, "cannot decrypt a provider API key: is WARDEN_MASTER_KEY the same on every process?");
    return null;
  }
}
