import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  UpdateGatewayKeyRequestSchema,
  type GatewayAdminService,
  type GatewayKeySchema,
} from "../../../gen/warden/gateway/v1/admin_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { alreadyExists, invalidArgument, notFound } from "../../platform/errors.ts";
import { fieldsToUpdate } from "../../platform/update-mask.ts";
import { optionalText, requireEmail, requireText, requireUuid } from "../../platform/validate.ts";
import { requireLlmPipeline } from "../../pipelines/queries.ts";
import { hashKey } from "../../workspaces/keys.ts";
import { AccessRuleEntity, GatewayGroupEntity, GatewayKeyEntity, GatewayUserEntity, type GatewayKeyRow } from "../config/entities.ts";
import { displayPrefix, generateGatewayKey } from "../keys.ts";

/** Gateway keys, and the users and groups that own them and that limits and allow lists name. */
type KeyRpcs = Pick<
  ServiceImpl<typeof GatewayAdminService>,
  | "createGatewayKey" | "listGatewayKeys" | "updateGatewayKey" | "deleteGatewayKey"
  | "createGatewayUser" | "listGatewayUsers" | "deleteGatewayUser"
  | "createGatewayGroup" | "listGatewayGroups" | "deleteGatewayGroup"
>;

export function keyRpcs(): KeyRpcs {
  return {
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
        inferencePipelineId: req.inferencePipelineId === undefined ? null : await trafficPipeline(em, workspaceId, req.inferencePipelineId),
        serverTiming: req.serverTiming ?? false,
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
      const fields = fieldsToUpdate(UpdateGatewayKeyRequestSchema, req, ["name", "user_id", "group_ids", "disabled", "inference_pipeline_id", "server_timing"]);
      if (fields.has("name")) key.name = optionalText("name", req.name, 255) ?? null;
      if (fields.has("user_id")) key.userId = req.userId === undefined ? null : await ownUserId(em, workspaceId, req.userId);
      if (fields.has("group_ids")) key.groupIds = await ownGroupIds(em, workspaceId, req.groupIds);
      if (fields.has("disabled")) key.disabled = req.disabled ?? false;
      if (fields.has("server_timing")) key.serverTiming = req.serverTiming ?? false;
      if (fields.has("inference_pipeline_id")) {
        key.inferencePipelineId = req.inferencePipelineId === undefined ? null : await trafficPipeline(em, workspaceId, req.inferencePipelineId);
      }
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
  };
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

/** A pipeline that traffic may be written to: of this workspace, of an llm-base project. */
export function trafficPipeline(em: EntityManager, workspaceId: string, pipelineId: string): Promise<string> {
  return requireLlmPipeline(em, workspaceId, pipelineId, "inferencePipelineId");
}

function gatewayKeyMessage(row: GatewayKeyRow): MessageInitShape<typeof GatewayKeySchema> {
  return {
    id: row.id,
    name: row.name ?? undefined,
    keyPrefix: row.keyPrefix,
    userId: row.userId ?? undefined,
    groupIds: row.groupIds,
    disabled: row.disabled,
    inferencePipelineId: row.inferencePipelineId ?? undefined,
    serverTiming: row.serverTiming,
    dateCreated: timestampFromDate(row.dateCreated),
    dateUpdated: timestampFromDate(row.dateUpdated),
  };
}
