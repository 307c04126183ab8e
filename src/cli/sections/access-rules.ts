import { z } from "zod";
import { AccessEffect, AccessSubject } from "../../../gen/warden/gateway/v1/admin_pb.js";
import { modelList, subjectFields, subjectId, subjectOf, subjectReference, withoutDefaults, type Section, type Subject } from "../section.ts";

export interface AccessRuleItem {
  effect: "block" | "allow";
  /** Null for a block rule, which applies to the workspace. */
  subject: Subject | null;
  models: string[];
}

const subjects = { key: AccessSubject.KEY, user: AccessSubject.USER, group: AccessSubject.GROUP } as const;

export const accessRules: Section<AccessRuleItem> = {
  name: "accessRules",
  noun: "access rule",
  item: () => z.strictObject({
    effect: z.enum(["block", "allow"], "must be block or allow"),
    ...subjectFields,
    models: modelList(true),
  }).transform((r, ctx): AccessRuleItem => {
    const subject = subjectOf(r);
    if (r.effect === "block" && (r.key ?? r.user ?? r.group) !== undefined) {
      ctx.addIssue({ code: "custom", message: "a block rule applies to the whole workspace: it names no key, user or group" });
    } else if (r.effect === "allow" && subject === undefined) {
      ctx.addIssue({ code: "custom", message: "an allow rule names exactly one of key, user and group" });
    }
    return { effect: r.effect, subject: subject ?? null, models: r.models };
  }),
  // One block list, and one allow list per subject: the models are what changes.
  keyOf: (r) => (r.subject ? `allow ${r.subject.kind} ${r.subject.name}` : "block workspace"),
  fields: ["models"],
  updatable: [],
  // The API has no update: the new list is made before the old one goes, so the subject is never without one.
  replace: "create-first",
  references: (r) => (r.subject ? [subjectReference(r.subject)] : []),

  async list(ctx) {
    const { items } = await ctx.api.admin.listAccessRules({});
    return items.map((r) => {
      const kind = r.subject === AccessSubject.KEY ? "key" : r.subject === AccessSubject.USER ? "user" : "group";
      return {
        id: r.id,
        item: {
          effect: r.effect === AccessEffect.BLOCK ? "block" : "allow",
          subject: r.subjectId === undefined ? null : { kind, name: ctx.names.name(kind, r.subjectId) },
          models: r.models,
        },
      };
    });
  },
  async create(ctx, r) {
    await ctx.api.admin.createAccessRule(r.subject
      ? { effect: AccessEffect.ALLOW, subject: subjects[r.subject.kind], subjectId: subjectId(ctx, r.subject), models: r.models }
      : { effect: AccessEffect.BLOCK, subject: AccessSubject.WORKSPACE, models: r.models });
  },
  async remove(ctx, id) {
    await ctx.api.admin.deleteAccessRule({ accessRuleId: id });
  },
  toFile: (r) => withoutDefaults({ effect: r.effect, ...(r.subject ? { [r.subject.kind]: r.subject.name } : {}), models: r.models }),
};
