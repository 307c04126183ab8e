import { createContextKey } from "@connectrpc/connect";
import type { HandlerContext } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Principal } from "./principal.ts";
import { unauthenticated } from "./errors.ts";

/** Set by the auth interceptor for every authenticated call. */
export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "principal" });

/** The call's own EntityManager fork, set by the entity-manager interceptor. */
export const entityManagerKey = createContextKey<EntityManager | undefined>(undefined, {
  description: "entity manager",
});

export function principalOf(ctx: HandlerContext): Principal {
  const principal = ctx.values.get(principalKey);
  if (!principal) throw unauthenticated("Missing API key.");
  return principal;
}

export function emOf(ctx: HandlerContext): EntityManager {
  const em = ctx.values.get(entityManagerKey);
  if (!em) throw new Error("no EntityManager on this call: is the interceptor registered?");
  return em;
}
