import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  GuardrailAction,
  GuardrailFailureMode,
  GuardrailKind,
  GuardrailStage,
  UpdateGuardrailRequestSchema,
  type GatewayAdminService,
  type GuardrailSchema,
} from "../../../gen/warden/gateway/v1/admin_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { enumName, enumValue, requireEnum } from "../../platform/enums.ts";
import { alreadyExists, invalidArgument, notFound } from "../../platform/errors.ts";
import { fieldsToUpdate } from "../../platform/update-mask.ts";
import { optionalText, requireUuid } from "../../platform/validate.ts";
import { GuardrailEntity, type GuardrailRow } from "../config/entities.ts";
import { contentCategories, piiEntityTypes } from "../guardrails/catalog.ts";
import { baseUrl, boundedInt } from "./validate.ts";

type GuardrailRpcs = Pick<ServiceImpl<typeof GatewayAdminService>, "createGuardrail" | "listGuardrails" | "updateGuardrail" | "deleteGuardrail">;

const updatable = [
  "enabled", "pii_entity_types", "injection_threshold", "content_thresholds", "on_error",
  "model_path", "tokenizer_path", "classifier_url", "classifier_timeout_ms", "action",
];

export function guardrailRpcs(): GuardrailRpcs {
  return {
    async createGuardrail(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const kind = requireEnum("kind", GuardrailKind, req.kind);
      const stage = requireEnum("stage", GuardrailStage, req.stage);
      if (await em.count(GuardrailEntity, { workspaceId, kind, stage })) {
        throw alreadyExists(`A ${kind.toLowerCase()} guardrail on the ${stage.toLowerCase()} stage already exists: update it instead`);
      }
      const now = new Date();
      const row = em.create(GuardrailEntity, {
        id: randomUUID(),
        workspaceId,
        kind,
        stage,
        enabled: req.enabled ?? true,
        piiEntityTypes: entityTypes(req.piiEntityTypes),
        injectionThreshold: unitInterval("injectionThreshold", req.injectionThreshold),
        contentThresholds: thresholds(req.contentThresholds),
        onError: enumName(GuardrailFailureMode, req.onError || GuardrailFailureMode.FAIL_OPEN),
        action: enumName(GuardrailAction, req.action || GuardrailAction.BLOCK),
        modelPath: optionalText("modelPath", req.modelPath, 1000) ?? null,
        tokenizerPath: optionalText("tokenizerPath", req.tokenizerPath, 1000) ?? null,
        classifierUrl: req.classifierUrl === undefined ? null : classifierUrl(req.classifierUrl),
        classifierTimeoutMs: req.classifierTimeoutMs === undefined ? null : boundedInt("classifierTimeoutMs", req.classifierTimeoutMs, 1000, 1, 60_000),
        dateCreated: now,
        dateUpdated: now,
      });
      checkPlugins(row);
      await em.flush();
      return { guardrail: guardrailMessage(row) };
    },

    async listGuardrails(_req, ctx) {
      const rows = await emOf(ctx).find(GuardrailEntity, { workspaceId: principalOf(ctx).workspaceId }, { orderBy: [{ kind: "asc" }, { stage: "asc" }] });
      return { items: rows.map(guardrailMessage) };
    },

    async updateGuardrail(req, ctx) {
      const em = emOf(ctx);
      const id = requireUuid("guardrailId", req.guardrailId);
      const row = await em.findOne(GuardrailEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (!row) throw notFound("Guardrail not found");
      const fields = fieldsToUpdate(UpdateGuardrailRequestSchema, req, updatable);
      if (fields.has("enabled")) row.enabled = req.enabled ?? true;
      if (fields.has("pii_entity_types")) row.piiEntityTypes = entityTypes(req.piiEntityTypes);
      if (fields.has("injection_threshold")) row.injectionThreshold = unitInterval("injectionThreshold", req.injectionThreshold);
      if (fields.has("content_thresholds")) row.contentThresholds = thresholds(req.contentThresholds);
      if (fields.has("on_error")) row.onError = enumName(GuardrailFailureMode, req.onError || GuardrailFailureMode.FAIL_OPEN);
      if (fields.has("model_path")) row.modelPath = optionalText("modelPath", req.modelPath, 1000) ?? null;
      if (fields.has("tokenizer_path")) row.tokenizerPath = optionalText("tokenizerPath", req.tokenizerPath, 1000) ?? null;
      if (fields.has("classifier_url")) row.classifierUrl = req.classifierUrl === undefined ? null : classifierUrl(req.classifierUrl);
      if (fields.has("action")) row.action = enumName(GuardrailAction, req.action || GuardrailAction.BLOCK);
      if (fields.has("classifier_timeout_ms")) {
        row.classifierTimeoutMs = req.classifierTimeoutMs === undefined ? null : boundedInt("classifierTimeoutMs", req.classifierTimeoutMs, 1000, 1, 60_000);
      }
      checkPlugins(row);
      row.dateUpdated = new Date();
      await em.flush();
      return { guardrail: guardrailMessage(row) };
    },

    async deleteGuardrail(req, ctx) {
      const id = requireUuid("guardrailId", req.guardrailId);
      const deleted = await emOf(ctx).nativeDelete(GuardrailEntity, { id, workspaceId: principalOf(ctx).workspaceId });
      if (deleted === 0) throw notFound("Guardrail not found");
      return {};
    },
  };
}

function entityTypes(types: string[]): string[] {
  const known: readonly string[] = piiEntityTypes;
  types.forEach((type, i) => {
    if (!known.includes(type)) throw invalidArgument(`piiEntityTypes[${i}] must be one of: ${piiEntityTypes.join(", ")}`);
  });
  return [...new Set(types)];
}

function unitInterval(field: string, value: number | undefined): number | null {
  if (value === undefined) return null;
  if (!(value >= 0 && value <= 1)) throw invalidArgument(`${field} must be a number from 0 to 1`);
  return value;
}

function thresholds(values: Record<string, number>): Record<string, number> {
  const known: readonly string[] = contentCategories;
  for (const [category, value] of Object.entries(values)) {
    if (!known.includes(category)) throw invalidArgument(`contentThresholds has an unknown category "${category}": use ${contentCategories.join(", ")}`);
    unitInterval(`contentThresholds.${category}`, value);
  }
  return values;
}

function classifierUrl(value: string): string {
  return baseUrl(value, "classifierUrl");
}

/**
 * A guardrail runs the built-in detector, an ONNX model (file and tokenizer), or an HTTP
 * classifier. Only the built-in PII detector says where its entities are, which redaction needs.
 */
function checkPlugins(row: GuardrailRow): void {
  if ((row.modelPath == null) !== (row.tokenizerPath == null)) throw invalidArgument("modelPath and tokenizerPath go together");
  if (row.modelPath != null && row.classifierUrl != null) throw invalidArgument("A guardrail uses an ONNX model or an HTTP classifier, not both");
  if (row.action === "REDACT" && row.kind !== "PII") throw invalidArgument("action redact is for PII guardrails only");
  if (row.action === "REDACT" && (row.modelPath != null || row.classifierUrl != null)) {
    throw invalidArgument("action redact needs the built-in PII detector: a plug-in does not say where the entities are");
  }
}

function guardrailMessage(row: GuardrailRow): MessageInitShape<typeof GuardrailSchema> {
  return {
    id: row.id,
    kind: enumValue(GuardrailKind, row.kind),
    stage: enumValue(GuardrailStage, row.stage),
    enabled: row.enabled,
    piiEntityTypes: row.piiEntityTypes,
    injectionThreshold: row.injectionThreshold == null ? undefined : Number(row.injectionThreshold),
    contentThresholds: row.contentThresholds,
    onError: enumValue(GuardrailFailureMode, row.onError),
    action: enumValue(GuardrailAction, row.action),
    modelPath: row.modelPath ?? undefined,
    tokenizerPath: row.tokenizerPath ?? undefined,
    classifierUrl: row.classifierUrl ?? undefined,
    classifierTimeoutMs: row.classifierTimeoutMs ?? undefined,
    dateCreated: timestampFromDate(row.dateCreated),
    dateUpdated: timestampFromDate(row.dateUpdated),
  };
}
