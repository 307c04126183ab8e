import type { Change } from "./plan.ts";
import type { SectionContext } from "./section.ts";

/** A change the API cannot make (a user's email, a provider's kind). */
export class RefusedChange extends Error {}

/** Checks that every change can be made, before any is. */
export function checkPlan(changes: readonly Change[]): void {
  for (const change of changes) {
    if (change.op === "replace" && change.section.replace !== "create-first") {
      throw new RefusedChange(`${change.section.noun} ${change.key}: ${change.section.replace.refuse}`);
    }
  }
}

/**
 * Makes the changes in the plan's order (creates and updates section by section, then deletes in
 * reverse), refreshing the names after a section that makes users or groups so that the rules
 * after it find them. Stops at the first error: what was done stays done, and a new apply
 * finishes the rest.
 */
export async function executePlan(ctx: SectionContext & { refreshNames(): Promise<void> }, changes: readonly Change[]): Promise<void> {
  let previous: Change | undefined;
  for (const change of changes) {
    if (previous && previous.section !== change.section) await ctx.refreshNames();
    previous = change;
    const section = change.section;
    if (change.op === "create") {
      await section.create(ctx, change.item);
    } else if (change.op === "update") {
      await section.update!(ctx, change.id, change.item, change.changes.map((c) => c.field));
    } else if (change.op === "replace") {
      await section.create(ctx, change.item);
      await section.remove(ctx, change.id);
    } else {
      await section.remove(ctx, change.id);
    }
  }
}
