import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  LimitPeriod,
  LimitScope,
  type GatewayAdminService,
  type UsageLimitSchema,
} from "../../../gen/warden/gateway/v1/admin_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { enumValue, requireEnum } from "../../platform/enums.ts";
import { alreadyExists, invalidArgument, notFound } from "../../platform/errors.ts";
import { requireUuid } from "../../platform/validate.ts";
import { GatewayGroupEntity, GatewayKeyEntity, GatewayUserEntity, UsageLimitEntity, type UsageLimitRow } from "../config/entities.ts";

type UsageLimitRpcs = Pick<ServiceImpl<typeof GatewayAdminService>, "createUsageLimit" | "listUsageLimits" | "updateUsageLimit" | "deleteUsageLimit">;

export function usageLimitRpcs(): UsageLimitRpcs {
  return {
    async createUsageLimit(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const scope = requireEnum("scope", LimitScope, req.scope);
      const period = requireEnum("period", LimitPeriod, req.period);
      const subjectId = await ownSubject(em, workspaceId, req.scope, req.subjectId);
      if (await em.count(UsageLimitEntity, { workspaceId, scope, subjectId, period })) {
        throw alreadyExists(`This ${scope.toLowerCase()} already has a ${period.toLowerCase()} limit: update it instead`);
      }
      const now = new Date();
      const row = em.create(UsageLimitEntity, {
        id: randomUUID(),
        workspaceId,
        scope,
        subjectId,
        period,
        tokenLimit: tokenLimit(req.tokenLimit),
        dateCreated: now,
        dateUpdated: now,
      });
      await em.flush();
      return { usageLimit: usageLimitMessage(row) };
    },

    async listUsageLimits(_req, ctx) {
      const rows = await emOf(ctx).find(UsageLimitEntity, { workspaceId: principalOf(ctx).workspaceId }, { orderBy: [{ dateCreated: "asc" }, { id: "asc" }] });
      return { items: rows.map(usageLimitMessage) };
    },

    async updateUsageLimit(req, ctx) {
      const em = emOf(ctx);
      const id = requireUuid("usageLimitId", req.usageLimitId);
      const row = await em.findOne(UsageLimitEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (!row) throw notFound("Usage limit not found");
      row.tokenLimit = tokenLimit(req.tokenLimit);
      row.dateUpdated = new Date();
      await em.flush();
      return { usageLimit: usageLimitMessage(row) };
    },

    async deleteUsageLimit(req, ctx) {
      const id = requireUuid("usageLimitId", req.usageLimitId);
      const deleted = await emOf(ctx).nativeDelete(UsageLimitEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (deleted === 0) throw notFound("Usage limit not found");
      return {};
    },
  };
}

function tokenLimit(value: bigint): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw invalidArgument("tokenLimit must be a positive integer");
  return n;
}

async function ownSubject(em: EntityManager, workspaceId: string, scope: LimitScope, subjectId: string): Promise<string> {
  const id = requireUuid("subjectId", subjectId);
  const count = scope === LimitScope.KEY
    ? await em.count(GatewayKeyEntity, { id, workspaceId })
    : scope === LimitScope.USER
      ? await em.count(GatewayUserEntity, { id, workspaceId })
      : await em.count(GatewayGroupEntity, { id, workspaceId });
  if (!count) throw invalidArgument(`subjectId names no ${LimitScope[scope].toLowerCase()} of this workspace`);
  return id;
}

export function usageLimitMessage(row: UsageLimitRow): MessageInitShape<typeof UsageLimitSchema> {
  return {
    id: row.id,
    scope: enumValue(LimitScope, row.scope),
    subjectId: row.subjectId,
    period: enumValue(LimitPeriod, row.period),
    tokenLimit: BigInt(row.tokenLimit),
    dateCreated: timestampFromDate(row.dateCreated),
    dateUpdated: timestampFromDate(row.dateUpdated),
  };
}
