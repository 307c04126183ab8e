import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

export const ProviderEntity = defineEntity({
  name: "GatewayProvider",
  tableName: "gateway_provider",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    name: p.string().length(64),
    kind: p.string().length(32),
    baseUrl: p.string().length(2000),
    /** AES-256-GCM under the master key: see secrets.ts. */
    apiKeyCiphertext: p.blob().nullable(),
    /** The first 12 hex digits of the key's SHA-256 (see providers.ts); null without a key, or for a key stored before it was kept. */
    apiKeySha256Prefix: p.string().length(12).nullable().fieldName("api_key_sha256_prefix"),
    connectTimeoutMs: p.integer(),
    headersTimeoutMs: p.integer(),
    bodyTimeoutMs: p.integer(),
    maxInFlight: p.integer(),
    apiVersion: p.string().length(64).nullable(),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
  },
});
export type ProviderRow = InferEntity<typeof ProviderEntity>;

export const RoutingRuleEntity = defineEntity({
  name: "GatewayRoutingRule",
  tableName: "gateway_routing_rule",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    priority: p.integer(),
    models: p.array(),
    /** Always targets[0]'s, kept in step with it (for readers of the one-target schema). */
    providerName: p.string().length(64),
    upstreamModel: p.string().length(255).nullable(),
    /** 1 to 8, in their order: see src/gateway/routing/candidates.ts. */
    targets: p.json<StoredRoutingTarget[]>(),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
  },
});
export type RoutingRuleRow = InferEntity<typeof RoutingRuleEntity>;

/** One element of gateway_routing_rule.targets (jsonb), every key always present. */
export interface StoredRoutingTarget {
  providerName: string;
  upstreamModel: string | null;
  /** 0 to 1000; null: none given. */
  weight: number | null;
}

export const GatewayUserEntity = defineEntity({
  name: "GatewayUser",
  tableName: "gateway_user",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    name: p.string().length(255),
    email: p.string().length(254).nullable(),
    dateCreated: p.datetime(),
  },
});
export type GatewayUserRow = InferEntity<typeof GatewayUserEntity>;

export const GatewayGroupEntity = defineEntity({
  name: "GatewayGroup",
  tableName: "gateway_group",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    name: p.string().length(255),
    dateCreated: p.datetime(),
  },
});
export type GatewayGroupRow = InferEntity<typeof GatewayGroupEntity>;

export const GatewayKeyEntity = defineEntity({
  name: "GatewayKey",
  tableName: "gateway_key",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    name: p.string().length(255).nullable(),
    /** SHA-256 of the whole key, hex. */
    keyHash: p.string().length(64),
    keyPrefix: p.string().length(16),
    userId: p.uuid().nullable(),
    groupIds: p.array(),
    disabled: p.boolean(),
    /** The inference pipeline its traffic is written to; null: the workspace's, if any. */
    inferencePipelineId: p.uuid().nullable(),
    /** Its answers carry Server-Timing. */
    serverTiming: p.boolean().default(false),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
  },
});
export type GatewayKeyRow = InferEntity<typeof GatewayKeyEntity>;

export const AccessRuleEntity = defineEntity({
  name: "GatewayAccessRule",
  tableName: "gateway_access_rule",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    effect: p.string().length(8),
    subject: p.string().length(16),
    subjectId: p.uuid().nullable(),
    models: p.array(),
    dateCreated: p.datetime(),
  },
});
export type AccessRuleRow = InferEntity<typeof AccessRuleEntity>;

export const GatewaySettingsEntity = defineEntity({
  name: "GatewaySettings",
  tableName: "gateway_settings",
  properties: {
    id: p.integer().primary(),
    maxInFlight: p.integer(),
    dateUpdated: p.datetime(),
  },
});

/** Per-workspace gateway settings: one row for a workspace that has set any. */
export const GatewayWorkspaceSettingsEntity = defineEntity({
  name: "GatewayWorkspaceSettings",
  tableName: "gateway_workspace_settings",
  properties: {
    workspaceId: p.uuid().primary(),
    /** The inference pipeline that the traffic of the workspace's keys goes to when a key names none. */
    inferencePipelineId: p.uuid().nullable(),
    /** The model that judges LLM tests (src/tests/evaluation/judge.ts), called through this gateway. */
    judgeModel: p.text().nullable(),
    /** The gateway key those calls use, sealed with the master key; never shown again. */
    judgeKeySealed: p.blob().nullable(),
    dateUpdated: p.datetime(),
  },
});
export type GatewayWorkspaceSettingsRow = InferEntity<typeof GatewayWorkspaceSettingsEntity>;

export const GuardrailEntity = defineEntity({
  name: "GatewayGuardrail",
  tableName: "gateway_guardrail",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    kind: p.string().length(24),
    stage: p.string().length(8),
    enabled: p.boolean(),
    piiEntityTypes: p.array(),
    injectionThreshold: p.double().nullable(),
    contentThresholds: p.json<Record<string, number>>(),
    onError: p.string().length(16),
    /** BLOCK or REDACT (PII only). */
    action: p.string().length(8).default("BLOCK"),
    modelPath: p.string().length(1000).nullable(),
    tokenizerPath: p.string().length(1000).nullable(),
    classifierUrl: p.string().length(2000).nullable(),
    classifierTimeoutMs: p.integer().nullable(),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
  },
});
export type GuardrailRow = InferEntity<typeof GuardrailEntity>;

export const UsageLimitEntity = defineEntity({
  name: "GatewayUsageLimit",
  tableName: "gateway_usage_limit",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    scope: p.string().length(8),
    subjectId: p.uuid(),
    period: p.string().length(16),
    /** TOKENS, USD or REQUESTS. */
    unit: p.string().length(8).default("TOKENS"),
    /** The limit in its unit: tokens, micro-dollars (USD) or requests. */
    tokenLimit: p.bigint("number"),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
  },
});
export type UsageLimitRow = InferEntity<typeof UsageLimitEntity>;

/** A workspace's own price for a model, on one provider or (providerName null) on any. */
export const ModelPriceEntity = defineEntity({
  name: "GatewayModelPrice",
  tableName: "gateway_model_price",
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    providerName: p.string().length(64).nullable(),
    model: p.string().length(255),
    /** Micro-dollars per million tokens. */
    inputMicros: p.bigint("number"),
    outputMicros: p.bigint("number"),
    /** Null: cached input costs what input costs. */
    cachedInputMicros: p.bigint("number").nullable(),
    dateCreated: p.datetime(),
    dateUpdated: p.datetime(),
  },
});
export type ModelPriceRow = InferEntity<typeof ModelPriceEntity>;

export const gatewayEntities = [
  GuardrailEntity,
  UsageLimitEntity,
  ModelPriceEntity,
  ProviderEntity,
  RoutingRuleEntity,
  GatewayUserEntity,
  GatewayGroupEntity,
  GatewayKeyEntity,
  AccessRuleEntity,
  GatewaySettingsEntity,
  GatewayWorkspaceSettingsEntity,
];
