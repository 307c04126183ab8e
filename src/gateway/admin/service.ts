import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  AccessEffect,
  AccessSubject,
  ProviderKind,
  UpdateGatewayKeyRequestSchema,
  UpdateProviderRequestSchema,
  UpdateRoutingRuleRequestSchema,
  type AccessRuleSchema,
  type GatewayAdminService,
  type GatewayKeySchema,
  type ProviderSchema,
  type RoutingRuleSchema,
} from "../../../gen/warden/gateway/v1/admin_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { enumName, enumValue, requireEnum } from "../../platform/enums.ts";
import { alreadyExists, invalidArgument, notFound } from "../../platform/errors.ts";
import { fieldsToUpdate } from "../../platform/update-mask.ts";
import { optionalText, requireEmail, requireText, requireUuid } from "../../platform/validate.ts";
import { hashKey } from "../../workspaces/keys.ts";
import {
  AccessRuleEntity,
  GatewayGroupEntity,
  GatewayKeyEntity,
  GatewaySettingsEntity,
  GatewayUserEntity,
  ProviderEntity,
  RoutingRuleEntity,
  type AccessRuleRow,
  type GatewayKeyRow,
  type ProviderRow,
  type RoutingRuleRow,
} from "../config/entities.ts";
import type { SecretBox } from "../config/secrets.ts";
import { displayPrefix, generateGatewayKey } from "../keys.ts";
import { guardrailRpcs } from "./guardrails.ts";
import { usageLimitRpcs } from "./usage-limits.ts";
import { baseUrl, boundedInt, modelPatterns, providerName } from "./validate.ts";

export interface GatewayAdminOptions {
  secrets: SecretBox;
  /** The global in-flight cap until an administrator sets one. */
  defaultMaxInFlight: number;
}

/** Defaults for a provider: LLM answers can take minutes before their first byte. */
export const providerDefaults = {
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 300_000,
  bodyTimeoutMs: 300_000,
  maxInFlight: 256,
};
const maxTimeoutMs = 3_600_000;

export function createGatewayAdminService(options: GatewayAdminOptions): ServiceImpl<typeof GatewayAdminService> {
  const { secrets } = options;

  return {
    ...guardrailRpcs(),
    ...usageLimitRpcs(),

    async createProvider(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const name = providerName("name", req.name);
      await assertProviderNameFree(em, workspaceId, name);
      const now = new Date();
      const provider = em.create(ProviderEntity, {
        id: randomUUID(),
        workspaceId,
        name,
        kind: requireEnum("kind", ProviderKind, req.kind),
        baseUrl: baseUrl(req.baseUrl),
        apiKeyCiphertext: req.apiKey ? secrets.seal(requireText("apiKey", req.apiKey, 4096)) : null,
        connectTimeoutMs: boundedInt("connectTimeoutMs", req.connectTimeoutMs, providerDefaults.connectTimeoutMs, 1, maxTimeoutMs),
        headersTimeoutMs: boundedInt("headersTimeoutMs", req.headersTimeoutMs, providerDefaults.headersTimeoutMs, 1, maxTimeoutMs),
        bodyTimeoutMs: boundedInt("bodyTimeoutMs", req.bodyTimeoutMs, providerDefaults.bodyTimeoutMs, 1, maxTimeoutMs),
        maxInFlight: boundedInt("maxInFlight", req.maxInFlight, providerDefaults.maxInFlight, 1, 100_000),
        apiVersion: optionalText("apiVersion", req.apiVersion, 64) ?? null,
        dateCreated: now,
        dateUpdated: now,
      });
      await em.flush();
      return { provider: providerMessage(provider) };
    },

    async listProviders(_req, ctx) {
      const rows = await emOf(ctx).find(ProviderEntity, { workspaceId: principalOf(ctx).workspaceId }, { orderBy: { name: "asc" } });
      return { items: rows.map(providerMessage) };
    },

    async getProvider(req, ctx) {
      return { provider: providerMessage(await ownProvider(emOf(ctx), principalOf(ctx).workspaceId, req.providerId)) };
    },

    async updateProvider(req, ctx) {
      const em = emOf(ctx);
      const provider = await ownProvider(em, principalOf(ctx).workspaceId, req.providerId);
      const fields = fieldsToUpdate(UpdateProviderRequestSchema, req, [
        "name", "base_url", "api_key", "connect_timeout_ms", "headers_timeout_ms", "body_timeout_ms", "max_in_flight", "api_version",
      ]);
      if (fields.has("name")) {
        const name = providerName("name", req.name);
        if (name !== provider.name) await assertProviderNameFree(em, provider.workspaceId, name);
        provider.name = name;
      }
      if (fields.has("base_url")) provider.baseUrl = baseUrl(req.baseUrl);
      if (fields.has("api_key")) provider.apiKeyCiphertext = req.apiKey ? secrets.seal(requireText("apiKey", req.apiKey, 4096)) : null;
      if (fields.has("connect_timeout_ms")) provider.connectTimeoutMs = boundedInt("connectTimeoutMs", req.connectTimeoutMs, providerDefaults.connectTimeoutMs, 1, maxTimeoutMs);
      if (fields.has("headers_timeout_ms")) provider.headersTimeoutMs = boundedInt("headersTimeoutMs", req.headersTimeoutMs, providerDefaults.headersTimeoutMs, 1, maxTimeoutMs);
      if (fields.has("body_timeout_ms")) provider.bodyTimeoutMs = boundedInt("bodyTimeoutMs", req.bodyTimeoutMs, providerDefaults.bodyTimeoutMs, 1, maxTimeoutMs);
      if (fields.has("max_in_flight")) provider.maxInFlight = boundedInt("maxInFlight", req.maxInFlight, providerDefaults.maxInFlight, 1, 100_000);
      if (fields.has("api_version")) provider.apiVersion = optionalText("apiVersion", req.apiVersion, 64) ?? null;
      provider.dateUpdated = new Date();
      await em.flush();
      return { provider: providerMessage(provider) };
    },

    async deleteProvider(req, ctx) {
      const em = emOf(ctx);
      const provider = await ownProvider(em, principalOf(ctx).workspaceId, req.providerId);
      await em.nativeDelete(ProviderEntity, { id: provider.id });
      return {};
    },

    async createRoutingRule(req, ctx) {
      const em = emOf(ctx);
      const now = new Date();
      const rule = em.create(RoutingRuleEntity, {
        id: randomUUID(),
        workspaceId: principalOf(ctx).workspaceId,
        priority: req.priority,
        models: modelPatterns("models", req.models, { atLeastOne: false }),
        providerName: providerName("providerName", req.providerName),
        upstreamModel: optionalText("upstreamModel", req.upstreamModel, 255) ?? null,
        dateCreated: now,
        dateUpdated: now,
      });
      await em.flush();
      return { routingRule: routingRuleMessage(rule) };
    },

    async listRoutingRules(_req, ctx) {
      const rows = await emOf(ctx).find(
        RoutingRuleEntity,
        { workspaceId: principalOf(ctx).workspaceId },
        { orderBy: [{ priority: "asc" }, { dateCreated: "asc" }, { id: "asc" }] },
      );
      return { items: rows.map(routingRuleMessage) };
    },

    async updateRoutingRule(req, ctx) {
      const em = emOf(ctx);
      const id = requireUuid("routingRuleId", req.routingRuleId);
      const rule = await em.findOne(RoutingRuleEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (!rule) throw notFound("Routing rule not found");
      const fields = fieldsToUpdate(UpdateRoutingRuleRequestSchema, req, ["priority", "models", "provider_name", "upstream_model"]);
      if (fields.has("priority")) rule.priority = req.priority ?? 0;
      if (fields.has("models")) rule.models = modelPatterns("models", req.models, { atLeastOne: false });
      if (fields.has("provider_name")) rule.providerName = providerName("providerName", req.providerName);
      if (fields.has("upstream_model")) rule.upstreamModel = optionalText("upstreamModel", req.upstreamModel, 255) ?? null;
      rule.dateUpdated = new Date();
      await em.flush();
      return { routingRule: routingRuleMessage(rule) };
    },

    async deleteRoutingRule(req, ctx) {
      const id = requireUuid("routingRuleId", req.routingRuleId);
      const deleted = await emOf(ctx).nativeDelete(RoutingRuleEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (deleted === 0) throw notFound("Routing rule not found");
      return {};
    },

    async createGatewayKey(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const secret = generateGatewayKey();
      const now = new Date();
      const key = em.create(GatewayKeyEntity, {
        id: randomUUID(),
        workspaceId,
        name: optionalText("name", req.name, 255) ?? null,
        keyHash: hashKey(secret),
        keyPrefix: displayPrefix(secret),
        userId: req.userId === undefined ? null : await ownUserId(em, workspaceId, req.userId),
        groupIds: await ownGroupIds(em, workspaceId, req.groupIds),
        disabled: false,
        dateCreated: now,
        dateUpdated: now,
      });
      await em.flush();
      return { gatewayKey: { ...gatewayKeyMessage(key), secret } };
    },

    async listGatewayKeys(_req, ctx) {
      const rows = await emOf(ctx).find(
        GatewayKeyEntity,
        { workspaceId: principalOf(ctx).workspaceId },
        { orderBy: [{ dateCreated: "asc" }, { id: "asc" }] },
      );
      return { items: rows.map(gatewayKeyMessage) };
    },

    async updateGatewayKey(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const id = requireUuid("gatewayKeyId", req.gatewayKeyId);
      const key = await em.findOne(GatewayKeyEntity, { id, workspaceId });
      if (!key) throw notFound("Gateway key not found");
      const fields = fieldsToUpdate(UpdateGatewayKeyRequestSchema, req, ["name", "user_id", "group_ids", "disabled"]);
      if (fields.has("name")) key.name = optionalText("name", req.name, 255) ?? null;
      if (fields.has("user_id")) key.userId = req.userId === undefined ? null : await ownUserId(em, workspaceId, req.userId);
      if (fields.has("group_ids")) key.groupIds = await ownGroupIds(em, workspaceId, req.groupIds);
      if (fields.has("disabled")) key.disabled = req.disabled ?? false;
      key.dateUpdated = new Date();
      await em.flush();
      return { gatewayKey: gatewayKeyMessage(key) };
    },

    async deleteGatewayKey(req, ctx) {
      const id = requireUuid("gatewayKeyId", req.gatewayKeyId);
      const deleted = await emOf(ctx).nativeDelete(GatewayKeyEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (deleted === 0) throw notFound("Gateway key not found");
      return {};
    },

    async createGatewayUser(req, ctx) {
      const em = emOf(ctx);
      const user = em.create(GatewayUserEntity, {
        id: randomUUID(),
        workspaceId: principalOf(ctx).workspaceId,
        name: requireText("name", req.name, 255),
        email: req.email === undefined ? null : requireEmail("email", req.email),
        dateCreated: new Date(),
      });
      await em.flush();
      return { user: { id: user.id, name: user.name, email: user.email ?? undefined, dateCreated: timestampFromDate(user.dateCreated) } };
    },

    async listGatewayUsers(_req, ctx) {
      const rows = await emOf(ctx).find(GatewayUserEntity, { workspaceId: principalOf(ctx).workspaceId }, { orderBy: [{ name: "asc" }, { id: "asc" }] });
      return {
        items: rows.map((u) => ({ id: u.id, name: u.name, email: u.email ?? undefined, dateCreated: timestampFromDate(u.dateCreated) })),
      };
    },

    async deleteGatewayUser(req, ctx) {
      const id = requireUuid("userId", req.userId);
      const deleted = await emOf(ctx).nativeDelete(GatewayUserEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (deleted === 0) throw notFound("Gateway user not found");
      return {};
    },

    async createGatewayGroup(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const name = requireText("name", req.name, 255);
      if (await em.count(GatewayGroupEntity, { workspaceId, name })) throw alreadyExists(`A group named "${name}" already exists`);
      const group = em.create(GatewayGroupEntity, { id: randomUUID(), workspaceId, name, dateCreated: new Date() });
      await em.flush();
      return { group: { id: group.id, name: group.name, dateCreated: timestampFromDate(group.dateCreated) } };
    },

    async listGatewayGroups(_req, ctx) {
      const rows = await emOf(ctx).find(GatewayGroupEntity, { workspaceId: principalOf(ctx).workspaceId }, { orderBy: { name: "asc" } });
      return { items: rows.map((g) => ({ id: g.id, name: g.name, dateCreated: timestampFromDate(g.dateCreated) })) };
    },

    async deleteGatewayGroup(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const id = requireUuid("groupId", req.groupId);
      await em.transactional(async (tx) => {
        const deleted = await tx.nativeDelete(GatewayGroupEntity, { id, workspaceId });
        if (deleted === 0) throw notFound("Gateway group not found");
        // Keys hold their groups as a list: a deleted group leaves them all.
        await tx.execute("update gateway_key set group_ids = array_remove(group_ids, ?) where workspace_id = ?", [id, workspaceId]);
        await tx.nativeDelete(AccessRuleEntity, { workspaceId, subjectId: id });
      });
      return {};
    },

    async createAccessRule(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const effect = requireEnum("effect", AccessEffect, req.effect);
      const subject = requireEnum("subject", AccessSubject, req.subject);
      let subjectId: string | null = null;
      if (req.effect === AccessEffect.BLOCK) {
        if (req.subject !== AccessSubject.WORKSPACE) throw invalidArgument("A block rule applies to the workspace: subject must be workspace");
        if (req.subjectId !== undefined) throw invalidArgument("A workspace rule takes no subjectId");
      } else {
        if (req.subject === AccessSubject.WORKSPACE) throw invalidArgument("An allow list applies to a key, a user or a group");
        if (req.subjectId === undefined) throw invalidArgument("subjectId is required");
        subjectId = await ownSubject(em, workspaceId, req.subject, req.subjectId);
      }
      const rule = em.create(AccessRuleEntity, {
        id: randomUUID(),
        workspaceId,
        effect,
        subject,
        subjectId,
        models: modelPatterns("models", req.models, { atLeastOne: true }),
        dateCreated: new Date(),
      });
      await em.flush();
      return { accessRule: accessRuleMessage(rule) };
    },

    async listAccessRules(_req, ctx) {
      const rows = await emOf(ctx).find(AccessRuleEntity, { workspaceId: principalOf(ctx).workspaceId }, { orderBy: [{ dateCreated: "asc" }, { id: "asc" }] });
      return { items: rows.map(accessRuleMessage) };
    },

    async deleteAccessRule(req, ctx) {
      const id = requireUuid("accessRuleId", req.accessRuleId);
      const deleted = await emOf(ctx).nativeDelete(AccessRuleEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (deleted === 0) throw notFound("Access rule not found");
      return {};
    },

    async getGatewaySettings(_req, ctx) {
      const row = await emOf(ctx).findOne(GatewaySettingsEntity, { id: 1 });
      return {
        settings: {
          maxInFlight: row?.maxInFlight ?? options.defaultMaxInFlight,
          dateUpdated: row ? timestampFromDate(row.dateUpdated) : undefined,
        },
      };
    },

    async updateGatewaySettings(req, ctx) {
      const em = emOf(ctx);
      const maxInFlight = boundedInt("maxInFlight", req.maxInFlight, 0, 1, 1_000_000);
      const now = new Date();
      await em.upsert(GatewaySettingsEntity, { id: 1, maxInFlight, dateUpdated: now });
      return { settings: { maxInFlight, dateUpdated: timestampFromDate(now) } };
    },
  };
}

async function ownProvider(em: EntityManager, workspaceId: string, providerId: string): Promise<ProviderRow> {
  const id = requireUuid("providerId", providerId);
  const provider = await em.findOne(ProviderEntity, { id, workspaceId });
  if (!provider) throw notFound("Provider not found");
  return provider;
}

async function assertProviderNameFree(em: EntityManager, workspaceId: string, name: string): Promise<void> {
  if (await em.count(ProviderEntity, { workspaceId, name })) throw alreadyExists(`A provider named "${name}" already exists`);
}

async function ownUserId(em: EntityManager, workspaceId: string, userId: string): Promise<string> {
  const id = requireUuid("userId", userId);
  if (!(await em.count(GatewayUserEntity, { id, workspaceId }))) throw invalidArgument("userId names no gateway user of this workspace");
  return id;
}

async function ownGroupIds(em: EntityManager, workspaceId: string, groupIds: string[]): Promise<string[]> {
  const ids = [...new Set(groupIds.map((id, i) => requireUuid(`groupIds[${i}]`, id)))];
  if (ids.length > 0 && (await em.count(GatewayGroupEntity, { id: { $in: ids }, workspaceId })) !== ids.length) {
    throw invalidArgument("groupIds names a group that is not in this workspace");
  }
  return ids;
}

async function ownSubject(em: EntityManager, workspaceId: string, subject: AccessSubject, subjectId: string): Promise<string> {
  const id = requireUuid("subjectId", subjectId);
  const count = subject === AccessSubject.KEY
    ? await em.count(GatewayKeyEntity, { id, workspaceId })
    : subject === AccessSubject.USER
      ? await em.count(GatewayUserEntity, { id, workspaceId })
      : await em.count(GatewayGroupEntity, { id, workspaceId });
  if (!count) throw invalidArgument(`subjectId names no ${enumName(AccessSubject, subject).toLowerCase()} of this workspace`);
  return id;
}

function providerMessage(row: ProviderRow): MessageInitShape<typeof ProviderSchema> {
  return {
    id: row.id,
    name: row.name,
    kind: enumValue(ProviderKind, row.kind),
    baseUrl: row.baseUrl,
    hasApiKey: row.apiKeyCiphertext != null,
    connectTimeoutMs: row.connectTimeoutMs,
    headersTimeoutMs: row.headersTimeoutMs,
    bodyTimeoutMs: row.bodyTimeoutMs,
    maxInFlight: row.maxInFlight,
    apiVersion: row.apiVersion ?? undefined,
    dateCreated: timestampFromDate(row.dateCreated),
    dateUpdated: timestampFromDate(row.dateUpdated),
  };
}

function routingRuleMessage(row: RoutingRuleRow): MessageInitShape<typeof RoutingRuleSchema> {
  return {
    id: row.id,
    priority: row.priority,
    models: row.models,
    providerName: row.providerName,
    upstreamModel: row.upstreamModel ?? undefined,
    dateCreated: timestampFromDate(row.dateCreated),
    dateUpdated: timestampFromDate(row.dateUpdated),
  };
}

function gatewayKeyMessage(row: GatewayKeyRow): MessageInitShape<typeof GatewayKeySchema> {
  return {
    id: row.id,
    name: row.name ?? undefined,
    keyPrefix: row.keyPrefix,
    userId: row.userId ?? undefined,
    groupIds: row.groupIds,
    disabled: row.disabled,
    dateCreated: timestampFromDate(row.dateCreated),
    dateUpdated: timestampFromDate(row.dateUpdated),
  };
}

function accessRuleMessage(row: AccessRuleRow): MessageInitShape<typeof AccessRuleSchema> {
  return {
    id: row.id,
    effect: enumValue(AccessEffect, row.effect),
    subject: enumValue(AccessSubject, row.subject),
    subjectId: row.subjectId ?? undefined,
    models: row.models,
    dateCreated: timestampFromDate(row.dateCreated),
  };
}
