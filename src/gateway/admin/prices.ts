import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { UpdateModelPriceRequestSchema, type GatewayAdminService, type ModelPriceSchema } from "../../../gen/warden/gateway/v1/admin_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { alreadyExists, invalidArgument, notFound } from "../../platform/errors.ts";
import { fieldsToUpdate } from "../../platform/update-mask.ts";
import { requireText, requireUuid } from "../../platform/validate.ts";
import { ModelPriceEntity, type ModelPriceRow } from "../config/entities.ts";
import { BUNDLED_PRICES_DATE, bundledPrices } from "../cost/bundled-prices.ts";
import { microsPerMillion } from "../cost/price-book.ts";

type PriceRpcs = Pick<ServiceImpl<typeof GatewayAdminService>, "createModelPrice" | "listModelPrices" | "updateModelPrice" | "deleteModelPrice">;

/** A price past this many dollars per million tokens is a typo, not a model (the dearest list price is 75 today). */
const MAX_USD_PER_MILLION = 100_000;

/** The workspace's own prices per model (and provider), over the bundled list prices. */
export function priceRpcs(): PriceRpcs {
  return {
    async createModelPrice(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const providerName = req.providerName === undefined ? null : requireText("providerName", req.providerName, 64);
      const model = requireText("model", req.model, 255);
      if (await em.count(ModelPriceEntity, { workspaceId, providerName, model })) {
        throw alreadyExists(`${model} already has a price${providerName === null ? "" : ` on ${providerName}`}: update it instead`);
      }
      const now = new Date();
      const row = em.create(ModelPriceEntity, {
        id: randomUUID(),
        workspaceId,
        providerName,
        model,
        inputMicros: micros("inputPerMillion", req.inputPerMillion),
        outputMicros: micros("outputPerMillion", req.outputPerMillion),
        cachedInputMicros: req.cachedInputPerMillion === undefined ? null : micros("cachedInputPerMillion", req.cachedInputPerMillion),
        dateCreated: now,
        dateUpdated: now,
      });
      await em.flush();
      return { modelPrice: modelPriceMessage(row) };
    },

    async listModelPrices(req, ctx) {
      const rows = await emOf(ctx).find(ModelPriceEntity, { workspaceId: principalOf(ctx).workspaceId }, { orderBy: [{ model: "asc" }, { providerName: "asc nulls first" }] });
      if (!req.includeBundled) return { items: rows.map(modelPriceMessage) };
      return {
        items: rows.map(modelPriceMessage),
        bundled: bundledPrices.map((list) => ({
          model: list.model,
          inputPerMillion: list.input,
          outputPerMillion: list.output,
          cachedInputPerMillion: list.cachedInput,
        })),
        bundledAsOf: BUNDLED_PRICES_DATE,
      };
    },

    async updateModelPrice(req, ctx) {
      const em = emOf(ctx);
      const id = requireUuid("modelPriceId", req.modelPriceId);
      const row = await em.findOne(ModelPriceEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (!row) throw notFound("Model price not found");
      const fields = fieldsToUpdate(UpdateModelPriceRequestSchema, req, ["input_per_million", "output_per_million", "cached_input_per_million"]);
      if (fields.has("input_per_million")) row.inputMicros = micros("inputPerMillion", req.inputPerMillion);
      if (fields.has("output_per_million")) row.outputMicros = micros("outputPerMillion", req.outputPerMillion);
      if (fields.has("cached_input_per_million")) {
        row.cachedInputMicros = req.cachedInputPerMillion === undefined ? null : micros("cachedInputPerMillion", req.cachedInputPerMillion);
      }
      row.dateUpdated = new Date();
      await em.flush();
      return { modelPrice: modelPriceMessage(row) };
    },

    async deleteModelPrice(req, ctx) {
      const id = requireUuid("modelPriceId", req.modelPriceId);
      const deleted = await emOf(ctx).nativeDelete(ModelPriceEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (deleted === 0) throw notFound("Model price not found");
      return {};
    },
  };
}

/** Dollars per million tokens, given to the micro-dollar, as whole micro-dollars. */
function micros(field: string, usd: number | undefined): number {
  if (usd === undefined) throw invalidArgument(`${field} is required`);
  const value = microsPerMillion(usd);
  if (!Number.isFinite(usd) || usd < 0 || usd > MAX_USD_PER_MILLION || Math.abs(usd * 1_000_000 - value) > 1e-6 * Math.max(1, value)) {
    throw invalidArgument(`${field} must be a number of dollars per million tokens from 0 to ${MAX_USD_PER_MILLION}, to the micro-dollar`);
  }
  return value;
}

function modelPriceMessage(row: ModelPriceRow): MessageInitShape<typeof ModelPriceSchema> {
  return {
    id: row.id,
    providerName: row.providerName ?? undefined,
    model: row.model,
    inputPerMillion: row.inputMicros / 1_000_000,
    outputPerMillion: row.outputMicros / 1_000_000,
    cachedInputPerMillion: row.cachedInputMicros == null ? undefined : row.cachedInputMicros / 1_000_000,
    dateCreated: timestampFromDate(row.dateCreated),
    dateUpdated: timestampFromDate(row.dateUpdated),
  };
}
