import { z } from "zod";
import { LimitPeriod, LimitScope, LimitUnit } from "../../../gen/warden/gateway/v1/admin_pb.js";
import { subjectFields, subjectId, subjectOf, subjectReference, type Section, type Subject } from "../section.ts";

const periods = { daily: LimitPeriod.DAILY, weekly: LimitPeriod.WEEKLY, monthly: LimitPeriod.MONTHLY, all_time: LimitPeriod.ALL_TIME } as const;
type Period = keyof typeof periods;
const periodNames = Object.keys(periods) as Period[];
const scopes = { key: LimitScope.KEY, user: LimitScope.USER, group: LimitScope.GROUP } as const;

/** The file's field per unit: `tokens: 1000000`, `usd: 25.5` or `requests: 1000`. */
type Unit = "tokens" | "usd" | "requests";

export interface UsageLimitItem {
  subject: Subject;
  period: Period;
  unit: Unit;
  limit: number;
}

export const usageLimits: Section<UsageLimitItem> = {
  name: "usageLimits",
  noun: "usage limit",
  item: () => z.strictObject({
    ...subjectFields,
    period: z.enum(periodNames, `must be one of: ${periodNames.join(", ")}`),
    tokens: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    usd: z.number().positive().max(1_000_000_000).optional(),
    requests: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  }).transform((l, ctx): UsageLimitItem => {
    const subject = subjectOf(l);
    if (subject === undefined) ctx.addIssue({ code: "custom", message: "a usage limit names exactly one of key, user and group" });
    const units = (["tokens", "usd", "requests"] as const).filter((unit) => l[unit] !== undefined);
    if (units.length !== 1) ctx.addIssue({ code: "custom", message: "a usage limit sets exactly one of tokens, usd and requests" });
    const unit = units[0] ?? "tokens";
    return { subject: subject ?? { kind: "key", name: "" }, period: l.period, unit, limit: l[unit] ?? 0 };
  }),
  // The API keeps one limit per subject, period and unit.
  keyOf: (l) => `${l.subject.kind} ${l.subject.name} ${l.period} ${l.unit}`,
  fields: ["limit"],
  updatable: ["limit"],
  replace: "create-first",
  references: (l) => [subjectReference(l.subject)],

  async list(ctx) {
    const { items } = await ctx.api.admin.listUsageLimits({});
    return items.map((l) => {
      const kind = l.scope === LimitScope.KEY ? "key" : l.scope === LimitScope.USER ? "user" : "group";
      const unit: Unit = l.unit === LimitUnit.USD ? "usd" : l.unit === LimitUnit.REQUESTS ? "requests" : "tokens";
      return {
        id: l.id,
        item: {
          subject: { kind, name: ctx.names.name(kind, l.subjectId) },
          period: periodNames.find((p) => periods[p] === l.period) ?? "all_time",
          unit,
          limit: unit === "usd" ? (l.costLimitUsd ?? 0) : Number(unit === "requests" ? (l.requestLimit ?? 0n) : l.tokenLimit),
        },
      };
    });
  },
  async create(ctx, l) {
    await ctx.api.admin.createUsageLimit({
      scope: scopes[l.subject.kind],
      subjectId: subjectId(ctx, l.subject),
      period: periods[l.period],
      ...amount(l),
    });
  },
  async update(ctx, id, l) {
    await ctx.api.admin.updateUsageLimit({ usageLimitId: id, ...amount(l) });
  },
  async remove(ctx, id) {
    await ctx.api.admin.deleteUsageLimit({ usageLimitId: id });
  },
  toFile: (l) => ({ [l.subject.kind]: l.subject.name, period: l.period, [l.unit]: l.limit }),
};

function amount(l: UsageLimitItem): { tokenLimit?: bigint; costLimitUsd?: number; requestLimit?: bigint } {
  if (l.unit === "usd") return { costLimitUsd: l.limit };
  if (l.unit === "requests") return { requestLimit: BigInt(l.limit) };
  return { tokenLimit: BigInt(l.limit) };
}
