import type { Section } from "./section.ts";
import { accessRules } from "./sections/access-rules.ts";
import { guardrails } from "./sections/guardrails.ts";
import { prices } from "./sections/prices.ts";
import { providers } from "./sections/providers.ts";
import { routingRules } from "./sections/routing-rules.ts";
import { usageLimits } from "./sections/usage-limits.ts";
import { groups, users } from "./sections/users-groups.ts";

/**
 * Every section of the file, in the order the file lists them and apply makes them: what an item
 * names comes before it (providers before the rules that route to them, users and groups before
 * the rules and limits on them). Deletes go in the reverse order.
 */
export const sections: readonly Section<object>[] = [
  providers, users, groups, routingRules, accessRules, usageLimits, guardrails, prices,
  // Each section's item type is its own; the plan handles them all as objects, the section's own code as its type.
] as unknown as readonly Section<object>[];
