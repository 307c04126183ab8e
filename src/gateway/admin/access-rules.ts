import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  AccessEffect,
  AccessSubject,
  type AccessRuleSchema,
  type GatewayAdminService,
} from "../../../gen/warden/gateway/v1/admin_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { enumName, enumValue, requireEnum } from "../../platform/enums.ts";
import { invalidArgument, notFound } from "../../platform/errors.ts";
import { requireUuid } from "../../platform/validate.ts";
import { AccessRuleEntity, GatewayGroupEntity, GatewayKeyEntity, GatewayUserEntity, type AccessRuleRow } from "../config/entities.ts";
import { modelPatterns } from "./validate.ts";

type AccessRuleRpcs = Pick<ServiceImpl<typeof GatewayAdminService>, "createAccessRule" | "listAccessRules" | "deleteAccessRule">;

export function accessRuleRpcs(): AccessRuleRpcs {
  return {
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
  };
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
