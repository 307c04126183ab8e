import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  LimitPeriod,
  LimitScope,
  LimitUnit,
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
      const { unit, amount } = limitOf(req);
      if (await em.count(UsageLimitEntity, { workspaceId, scope, subjectId, period, unit })) {
        throw alreadyExists(`This ${scope.toLowerCase()} already has a ${period.toLowerCase()} ${unitNames[unit]} limit: update it instead`);
      }
      const now = new Date();
      const row = em.create(UsageLimitEntity, {
        id: randomUUID(),
        workspaceId,
        scope,
        subjectId,
        period,
        unit,
        tokenLimit: amount,
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
      const { unit, amount } = limitOf(req);
      if (unit !== row.unit) throw invalidArgument(`This is a ${unitNames[row.unit as StoredUnit]} limit: set ${limitFields[row.unit as StoredUnit]}`);
      row.tokenLimit = amount;
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

type StoredUnit = "TOKENS" | "USD" | "REQUESTS";
const unitNames: Record<StoredUnit, string> = { TOKENS: "token", USD: "dollar", REQUESTS: "request" };
const limitFields: Record<StoredUnit, string> = { TOKENS: "tokenLimit", USD: "costLimitUsd", REQUESTS: "requestLimit" };
/** The largest dollar limit: a billion dollars, whose micro-dollars a double still holds exactly. */
const MAX_COST_LIMIT_USD = 1_000_000_000;

/** The one limit a request sets, as its unit and its amount in that unit (micro-dollars for USD). */
function limitOf(req: { tokenLimit: bigint; costLimitUsd?: number; requestLimit?: bigint }): { unit: StoredUnit; amount: number } {
  const given = [req.tokenLimit !== 0n, req.costLimitUsd !== undefined, req.requestLimit !== undefined].filter(Boolean).length;
  if (given !== 1) throw invalidArgument("Set exactly one of tokenLimit, costLimitUsd and requestLimit");
  if (req.costLimitUsd !== undefined) {
    const usd = req.costLimitUsd;
    const micros = Math.round(usd * 1_000_000);
    if (!Number.isFinite(usd) || usd <= 0 || usd > MAX_COST_LIMIT_USD || Math.abs(usd * 1_000_000 - micros) > 1e-6 * Math.max(1, micros)) {
      throw invalidArgument(`costLimitUsd must be a positive number of dollars, to the micro-dollar, at most ${MAX_COST_LIMIT_USD}`);
    }
    return { unit: "USD", amount: micros };
  }
  if (req.requestLimit !== undefined) return { unit: "REQUESTS", amount: positive("requestLimit", req.requestLimit) };
  return { unit: "TOKENS", amount: positive("tokenLimit", req.tokenLimit) };
}

function positive(name: string, value: bigint): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw invalidArgument(`${name} must be a positive integer`);
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
    unit: enumValue(LimitUnit, row.unit),
    tokenLimit: row.unit === "TOKENS" ? BigInt(row.tokenLimit) : 0n,
    costLimitUsd: row.unit === "USD" ? row.tokenLimit / 1_000_000 : undefined,
    requestLimit: row.unit === "REQUESTS" ? BigInt(row.tokenLimit) : undefined,
    dateCreated: timestampFromDate(row.dateCreated),
    dateUpdated: timestampFromDate(row.dateUpdated),
  };
}
