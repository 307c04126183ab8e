import { z } from "zod";
import { GuardrailAction, GuardrailFailureMode, GuardrailKind, GuardrailStage } from "../../../gen/warden/gateway/v1/admin_pb.js";
import { snakeCase, withoutDefaults, type Section } from "../section.ts";

const kinds = { pii: GuardrailKind.PII, prompt_injection: GuardrailKind.PROMPT_INJECTION, content_safety: GuardrailKind.CONTENT_SAFETY } as const;
type Kind = keyof typeof kinds;
const kindNames = Object.keys(kinds) as Kind[];
const stages = { input: GuardrailStage.INPUT, output: GuardrailStage.OUTPUT } as const;
type Stage = keyof typeof stages;
const failureModes = { fail_open: GuardrailFailureMode.FAIL_OPEN, fail_closed: GuardrailFailureMode.FAIL_CLOSED } as const;
type FailureMode = keyof typeof failureModes;
const actions = { block: GuardrailAction.BLOCK, redact: GuardrailAction.REDACT } as const;
type Action = keyof typeof actions;

export interface GuardrailItem {
  kind: Kind;
  stage: Stage;
  enabled: boolean;
  piiEntityTypes: string[];
  injectionThreshold: number | null;
  contentThresholds: Record<string, number>;
  onError: FailureMode;
  action: Action;
  modelPath: string | null;
  tokenizerPath: string | null;
  classifierUrl: string | null;
  classifierTimeoutMs: number | null;
}

const updatable = [
  "enabled", "piiEntityTypes", "injectionThreshold", "contentThresholds", "onError",
  "modelPath", "tokenizerPath", "classifierUrl", "classifierTimeoutMs", "action",
] as const;

export const guardrails: Section<GuardrailItem> = {
  name: "guardrails",
  noun: "guardrail",
  item: () => z.strictObject({
    kind: z.enum(kindNames, `must be one of: ${kindNames.join(", ")}`),
    stage: z.enum(["input", "output"], "must be input or output"),
    enabled: z.boolean().default(true),
    piiEntityTypes: z.array(z.string().min(1)).default([]),
    injectionThreshold: z.number().min(0).max(1).optional(),
    contentThresholds: z.record(z.string(), z.number().min(0).max(1)).default({}),
    onError: z.enum(["fail_open", "fail_closed"], "must be fail_open or fail_closed").default("fail_open"),
    action: z.enum(["block", "redact"], "must be block or redact").default("block"),
    modelPath: z.string().min(1).max(1000).optional(),
    tokenizerPath: z.string().min(1).max(1000).optional(),
    classifierUrl: z.string().min(1).max(2000).optional(),
    classifierTimeoutMs: z.number().int().min(1).max(60_000).optional(),
  }).transform((g): GuardrailItem => ({
    ...g,
    injectionThreshold: g.injectionThreshold ?? null,
    modelPath: g.modelPath ?? null,
    tokenizerPath: g.tokenizerPath ?? null,
    classifierUrl: g.classifierUrl ?? null,
    classifierTimeoutMs: g.classifierTimeoutMs ?? null,
  })),
  // The API keeps one guardrail per kind and stage.
  keyOf: (g) => `${g.kind} ${g.stage}`,
  fields: updatable,
  updatable,
  replace: "create-first",

  async list(ctx) {
    const { items } = await ctx.api.admin.listGuardrails({});
    return items.map((g) => ({
      id: g.id,
      item: {
        kind: kindNames.find((k) => kinds[k] === g.kind) ?? "pii",
        stage: g.stage === GuardrailStage.OUTPUT ? "output" : "input",
        enabled: g.enabled,
        piiEntityTypes: g.piiEntityTypes,
        injectionThreshold: g.injectionThreshold ?? null,
        contentThresholds: g.contentThresholds,
        onError: g.onError === GuardrailFailureMode.FAIL_CLOSED ? "fail_closed" : "fail_open",
        action: g.action === GuardrailAction.REDACT ? "redact" : "block",
        modelPath: g.modelPath ?? null,
        tokenizerPath: g.tokenizerPath ?? null,
        classifierUrl: g.classifierUrl ?? null,
        classifierTimeoutMs: g.classifierTimeoutMs ?? null,
      },
    }));
  },
  async create(ctx, g) {
    await ctx.api.admin.createGuardrail({ kind: kinds[g.kind], stage: stages[g.stage], ...settings(g) });
  },
  async update(ctx, id, g, changed) {
    await ctx.api.admin.updateGuardrail({ guardrailId: id, ...settings(g), updateMask: { paths: changed.map(snakeCase) } });
  },
  async remove(ctx, id) {
    await ctx.api.admin.deleteGuardrail({ guardrailId: id });
  },
  toFile: (g) => withoutDefaults({ ...g }, { enabled: true, onError: "fail_open", action: "block" }),
};

function settings(g: GuardrailItem) {
  return {
    enabled: g.enabled,
    piiEntityTypes: g.piiEntityTypes,
    injectionThreshold: g.injectionThreshold ?? undefined,
    contentThresholds: g.contentThresholds,
    onError: failureModes[g.onError],
    action: actions[g.action],
    modelPath: g.modelPath ?? undefined,
    tokenizerPath: g.tokenizerPath ?? undefined,
    classifierUrl: g.classifierUrl ?? undefined,
    classifierTimeoutMs: g.classifierTimeoutMs ?? undefined,
  };
}
