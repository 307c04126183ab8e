import { createHash, randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  ProviderKind,
  UpdateProviderRequestSchema,
  type GatewayAdminService,
  type ProviderSchema,
} from "../../../gen/warden/gateway/v1/admin_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { enumValue, requireEnum } from "../../platform/enums.ts";
import { alreadyExists, notFound } from "../../platform/errors.ts";
import { fieldsToUpdate } from "../../platform/update-mask.ts";
import { optionalText, requireText, requireUuid } from "../../platform/validate.ts";
import { ProviderEntity, type ProviderRow } from "../config/entities.ts";
import type { SecretBox } from "../config/secrets.ts";
import { boundedInt, providerBaseUrl, providerName } from "./validate.ts";

type ProviderRpcs = Pick<ServiceImpl<typeof GatewayAdminService>, "createProvider" | "listProviders" | "getProvider" | "updateProvider" | "deleteProvider">;

/** Defaults for a provider: LLM answers can take minutes before their first byte. */
const providerDefaults = {
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 300_000,
  bodyTimeoutMs: 300_000,
  maxInFlight: 256,
};
const maxTimeoutMs = 3_600_000;

export function providerRpcs(secrets: SecretBox): ProviderRpcs {
  return {
    async createProvider(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const name = providerName("name", req.name);
      await assertProviderNameFree(em, workspaceId, name);
      const now = new Date();
      const kind = requireEnum("kind", ProviderKind, req.kind);
      const provider = em.create(ProviderEntity, {
        id: randomUUID(),
        workspaceId,
        name,
        kind,
        baseUrl: providerBaseUrl(req.baseUrl, kind),
        ...storedKey(secrets, req.apiKey),
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
      if (fields.has("base_url")) provider.baseUrl = providerBaseUrl(req.baseUrl, provider.kind);
      if (fields.has("api_key")) Object.assign(provider, storedKey(secrets, req.apiKey));
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
  };
}

/**
 * The key sealed, and its fingerprint: the first 12 hex digits of its SHA-256, which `warden apply`
 * compares with the key it holds. Provider keys are long random strings, so 48 bits of their hash
 * reveal nothing useful, and the key itself is never returned.
 */
function storedKey(secrets: SecretBox, apiKey: string | undefined): Pick<ProviderRow, "apiKeyCiphertext" | "apiKeySha256Prefix"> {
  if (!apiKey) return { apiKeyCiphertext: null, apiKeySha256Prefix: null };
  const key = requireText("apiKey", apiKey, 4096);
  return { apiKeyCiphertext: secrets.seal(key), apiKeySha256Prefix: createHash("sha256").update(key).digest("hex").slice(0, 12) };
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
    apiKeySha256Prefix: row.apiKeySha256Prefix ?? undefined,
    dateCreated: timestampFromDate(row.dateCreated),
    dateUpdated: timestampFromDate(row.dateUpdated),
  };
}
