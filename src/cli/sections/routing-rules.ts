import { z } from "zod";
import { modelList, withoutDefaults, type Section } from "../section.ts";

export interface RoutingRuleItem {
  priority: number;
  models: string[];
  targets: { provider: string; upstreamModel: string | null; weight: number | null }[];
}

const target = z.strictObject({
  provider: z.string().min(1),
  upstreamModel: z.string().min(1).max(255).optional(),
  weight: z.number().int().min(0).max(1000).optional(),
}).transform((t) => ({ provider: t.provider, upstreamModel: t.upstreamModel ?? null, weight: t.weight ?? null }));

export const routingRules: Section<RoutingRuleItem> = {
  name: "routingRules",
  noun: "routing rule",
  item: () => z.strictObject({
    priority: z.number().int().min(-2_147_483_648).max(2_147_483_647),
    models: modelList(false).default([]),
    targets: z.array(target).min(1, "must list 1 to 8 targets").max(8, "must list 1 to 8 targets"),
  }),
  // Priorities order the rules, so one per rule makes the order the file's.
  keyOf: (r) => `priority ${r.priority}`,
  fields: ["models", "targets"],
  updatable: ["models", "targets"],
  replace: "create-first",
  references: (r) => r.targets.map((t, i) => ({ section: "providers", name: t.provider, path: ["targets", i, "provider"] })),

  async list(ctx) {
    const { items } = await ctx.api.admin.listRoutingRules({});
    return items.map((r) => ({
      id: r.id,
      item: {
        priority: r.priority,
        models: r.models,
        targets: r.targets.map((t) => ({ provider: t.providerName, upstreamModel: t.upstreamModel ?? null, weight: t.weight ?? null })),
      },
    }));
  },
  async create(ctx, r) {
    await ctx.api.admin.createRoutingRule({ priority: r.priority, models: r.models, targets: apiTargets(r) });
  },
  async update(ctx, id, r) {
    // Both lists are sent whole (an empty models list is a catch-all, so the mask says it is meant).
    await ctx.api.admin.updateRoutingRule({ routingRuleId: id, models: r.models, targets: apiTargets(r), updateMask: { paths: ["models", "targets"] } });
  },
  async remove(ctx, id) {
    await ctx.api.admin.deleteRoutingRule({ routingRuleId: id });
  },
  toFile: (r) => withoutDefaults({
    priority: r.priority,
    models: r.models,
    targets: r.targets.map((t) => withoutDefaults({ provider: t.provider, upstreamModel: t.upstreamModel, weight: t.weight })),
  }),
};

function apiTargets(r: RoutingRuleItem) {
  return r.targets.map((t) => ({ providerName: t.provider, upstreamModel: t.upstreamModel ?? undefined, weight: t.weight ?? undefined }));
}
