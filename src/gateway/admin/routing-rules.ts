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
import { invalidArgument, notFound } from "../../platform/errors.ts";
import { fieldsToUpdate } from "../../platform/update-mask.ts";
import { requireUuid } from "../../platform/validate.ts";
import { RoutingRuleEntity, type RoutingRuleRow, type StoredRoutingTarget } from "../config/entities.ts";
import { checkRoutingTargets, modelPatterns, providerName, routingTargets, upstreamModelName } from "./validate.ts";

type RoutingRuleRpcs = Pick<ServiceImpl<typeof GatewayAdminService>, "createRoutingRule" | "listRoutingRules" | "updateRoutingRule" | "deleteRoutingRule">;

/**
 * A rule's targets are stored in `targets`; `provider_name` and `upstream_model` are kept equal to
 * the first target's, and the API answers both. Given alone, providerName (with upstreamModel)
 * makes or changes the first target: a rule of one target is created as it always was.
 */
export function routingRuleRpcs(): RoutingRuleRpcs {
  return {
    async createRoutingRule(req, ctx) {
      const em = emOf(ctx);
      const now = new Date();
      const models = modelPatterns("models", req.models, { atLeastOne: false });
      let targets: StoredRoutingTarget[];
      if (req.targets.length > 0) {
        if (req.providerName !== "") throw bothGiven("providerName");
        if (req.upstreamModel !== undefined) throw bothGiven("upstreamModel");
        targets = routingTargets(req.targets);
      } else {
        if (req.providerName === "" && req.upstreamModel === undefined) {
          throw invalidArgument("targets is required: list 1 to 8 targets, or give providerName for a rule with one.");
        }
        targets = [{
          providerName: providerName("providerName", req.providerName),
          upstreamModel: upstreamModelName("upstreamModel", req.upstreamModel),
          weight: null,
        }];
      }
      const rule = em.create(RoutingRuleEntity, {
        id: randomUUID(),
        workspaceId: principalOf(ctx).workspaceId,
        priority: req.priority,
        models,
        ...storedTargets(targets),
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
      const fields = fieldsToUpdate(UpdateRoutingRuleRequestSchema, req, ["priority", "models", "provider_name", "upstream_model", "targets"]);
      if (fields.has("targets")) {
        if (fields.has("provider_name")) throw bothGiven("providerName");
        if (fields.has("upstream_model")) throw bothGiven("upstreamModel");
      }
      if (fields.has("priority")) rule.priority = req.priority ?? 0;
      if (fields.has("models")) rule.models = modelPatterns("models", req.models, { atLeastOne: false });
      if (fields.has("targets")) {
        Object.assign(rule, storedTargets(routingTargets(req.targets)));
      } else if (fields.has("provider_name") || fields.has("upstream_model")) {
        // The first target changes; the others stay.
        const [first, ...rest] = targetsOf(rule);
        const changed: StoredRoutingTarget = {
          providerName: fields.has("provider_name") ? providerName("providerName", req.providerName) : first!.providerName,
          upstreamModel: fields.has("upstream_model") ? upstreamModelName("upstreamModel", req.upstreamModel) : first!.upstreamModel,
          weight: first!.weight,
        };
        const targets = [changed, ...rest];
        checkRoutingTargets(targets);
        Object.assign(rule, storedTargets(targets));
      }
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

function bothGiven(field: "providerName" | "upstreamModel") {
  return invalidArgument(
    `${field} and targets cannot both be given: providerName and upstreamModel set the first target only, targets sets them all.`,
  );
}

/** The stored columns for these targets: the list, and the first target's in the one-target columns. */
function storedTargets(targets: StoredRoutingTarget[]): Pick<RoutingRuleRow, "targets" | "providerName" | "upstreamModel"> {
  const first = targets[0]!;
  return {
    targets: targets.map((t) => ({ providerName: t.providerName, upstreamModel: t.upstreamModel, weight: t.weight })),
    providerName: first.providerName,
    upstreamModel: first.upstreamModel,
  };
}

/** The stored targets; never empty (a check constraint), but the one-target columns stand in if they were. */
function targetsOf(row: RoutingRuleRow): StoredRoutingTarget[] {
  const stored = Array.isArray(row.targets) ? row.targets : [];
  if (stored.length > 0) {
    return stored.map((t) => ({ providerName: t.providerName, upstreamModel: t.upstreamModel ?? null, weight: t.weight ?? null }));
  }
  return [{ providerName: row.providerName, upstreamModel: row.upstreamModel ?? null, weight: null }];
}

function routingRuleMessage(row: RoutingRuleRow): MessageInitShape<typeof RoutingRuleSchema> {
  const targets = targetsOf(row);
  return {
    id: row.id,
    priority: row.priority,
    models: row.models,
    providerName: targets[0]!.providerName,
    upstreamModel: targets[0]!.upstreamModel ?? undefined,
    targets: targets.map((t) => ({
      providerName: t.providerName,
      upstreamModel: t.upstreamModel ?? undefined,
      weight: t.weight ?? undefined,
    })),
    dateCreated: timestampFromDate(row.dateCreated),
    dateUpdated: timestampFromDate(row.dateUpdated),
  };
}
