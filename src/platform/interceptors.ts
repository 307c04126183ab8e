import { getOption } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { UniqueConstraintViolationException } from "@mikro-orm/core";
import { auth as authOption, Permission } from "../../gen/warden/api/v1/annotations_pb.js";
import { Role } from "../../gen/warden/api/v1/common_pb.js";
import { entityManagerKey, principalKey } from "./context.ts";
import { alreadyExists, asConnectError, permissionDenied, unauthenticated } from "./errors.ts";
import type { Logger } from "./logger.ts";
import { roleAllows, type Principal } from "./principal.ts";

/** Turns a secret into the principal it stands for; null when no live key matches. */
export interface Authenticator {
  authenticate(secret: string): Promise<Principal | null>;
}

/** Internal failures are logged once, with their cause, and answered as Connect errors. */
export function errorInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      if (err instanceof UniqueConstraintViolationException) throw alreadyExists("The resource already exists");
      const connectError = asConnectError(err);
      if (connectError !== err) logger.error({ err, rpc: req.url }, "rpc failed");
      throw connectError;
    }
  };
}

/**
 * Resolves the caller on every RPC and checks its role against the RPC's auth rule in the
 * proto. An RPC without a rule is refused: access is opt-in.
 */
export function authInterceptor(authenticator: Authenticator): Interceptor {
  return (next) => async (req) => {
    const rule = getOption(req.method, authOption);
    const secret = bearerToken(req.header.get("authorization")) ??
      (rule.apiKeyHeader ? req.header.get("x-api-key")?.trim() || undefined : undefined);
    if (!secret) throw unauthenticated("Missing API key. Send it as Authorization: Bearer <key>.");
    const principal = await authenticator.authenticate(secret);
    if (!principal) throw unauthenticated("Invalid API key.");
    if (rule.permission === Permission.UNSPECIFIED || !roleAllows(principal.role, rule.permission)) {
      throw permissionDenied(`The ${Role[principal.role]} role may not call ${req.method.name}.`);
    }
    req.contextValues.set(principalKey, principal);
    return next(req);
  };
}

/** Every call gets its own EntityManager fork, made here and nowhere else. */
export function entityManagerInterceptor(orm: MikroORM): Interceptor {
  return (next) => async (req) => {
    req.contextValues.set(entityManagerKey, orm.em.fork());
    return next(req);
  };
}

function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
