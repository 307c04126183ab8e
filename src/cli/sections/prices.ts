import { z } from "zod";
import { snakeCase, withoutDefaults, type Section } from "../section.ts";

export interface PriceItem {
  /** Null: the price holds on any provider. */
  provider: string | null;
  model: string;
  inputPerMillion: number;
  outputPerMillion: number;
  /** Null: cached input costs what input costs. */
  cachedInputPerMillion: number | null;
}

const usdPerMillion = z.number().min(0).max(100_000);

export const prices: Section<PriceItem> = {
  name: "prices",
  noun: "price",
  item: () => z.strictObject({
    model: z.string().min(1).max(255),
    provider: z.string().min(1).max(64).optional(),
    inputPerMillion: usdPerMillion,
    outputPerMillion: usdPerMillion,
    cachedInputPerMillion: usdPerMillion.optional(),
  }).transform((p): PriceItem => ({ ...p, provider: p.provider ?? null, cachedInputPerMillion: p.cachedInputPerMillion ?? null })),
  // The API keeps one price per model and provider.
  keyOf: (p) => (p.provider === null ? p.model : `${p.model} on ${p.provider}`),
  fields: ["inputPerMillion", "outputPerMillion", "cachedInputPerMillion"],
  updatable: ["inputPerMillion", "outputPerMillion", "cachedInputPerMillion"],
  replace: "create-first",
  references: (p) => (p.provider === null ? [] : [{ section: "providers", name: p.provider, path: ["provider"] }]),

  async list(ctx) {
    const { items } = await ctx.api.admin.listModelPrices({});
    return items.map((p) => ({
      id: p.id,
      item: {
        provider: p.providerName ?? null,
        model: p.model,
        inputPerMillion: p.inputPerMillion,
        outputPerMillion: p.outputPerMillion,
        cachedInputPerMillion: p.cachedInputPerMillion ?? null,
      },
    }));
  },
  async create(ctx, p) {
    await ctx.api.admin.createModelPrice({ providerName: p.provider ?? undefined, model: p.model, ...amounts(p) });
  },
  async update(ctx, id, p, changed) {
    await ctx.api.admin.updateModelPrice({ modelPriceId: id, ...amounts(p), updateMask: { paths: changed.map(snakeCase) } });
  },
  async remove(ctx, id) {
    await ctx.api.admin.deleteModelPrice({ modelPriceId: id });
  },
  toFile: (p) => withoutDefaults({ model: p.model, provider: p.provider, inputPerMillion: p.inputPerMillion, outputPerMillion: p.outputPerMillion, cachedInputPerMillion: p.cachedInputPerMillion }),
};

function amounts(p: PriceItem) {
  return { inputPerMillion: p.inputPerMillion, outputPerMillion: p.outputPerMillion, cachedInputPerMillion: p.cachedInputPerMillion ?? undefined };
}
