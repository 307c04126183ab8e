import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  UpdateRoutingRuleRequestSchema,
  type GatewayAdminService,
  type RoutingRuleSchema,
} from "../../../gen/warden/gateway/v1/admin_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { notFound } from "../../platform/errors.ts";
import { fieldsToUpdate } from "../../platform/update-mask.ts";
import { optionalText, requireUuid } from "../../platform/validate.ts";
import { RoutingRuleEntity, type RoutingRuleRow } from "../config/entities.ts";
import { modelPatterns, providerName } from "./validate.ts";

type RoutingRuleRpcs = Pick<ServiceImpl<typeof GatewayAdminService>, "createRoutingRule" | "listRoutingRules" | "updateRoutingRule" | "deleteRoutingRule">;

export function routingRuleRpcs(): RoutingRuleRpcs {
  return {
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
