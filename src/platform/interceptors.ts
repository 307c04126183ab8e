import { getOption, type DescMessage } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { DriverException, UniqueConstraintViolationException } from "@mikro-orm/core";
import { auth as authOption, Permission } from "../../gen/warden/api/v1/annotations_pb.js";
import { Role } from "../../gen/warden/api/v1/common_pb.js";
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { entityManagerKey, principalKey } from "./context.ts";
import { bearerToken } from "./http.ts";
import { alreadyExists, asConnectError, invalidArgument, permissionDenied, unauthenticated, unavailable } from "./errors.ts";
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
      // SQLSTATE class 22, "data exception": a value PostgreSQL cannot store, such as a NUL
      // character in text. That is the caller's input, not our failure.
      if (err instanceof DriverException && typeof err.code === "string" && err.code.startsWith("22")) {
        throw invalidArgument("A value in the request cannot be stored (it contains a NUL character or is out of range)");
      }
      // PostgreSQL down, frozen or slow past a deadline (src/db/deadlines.ts): transient, so 503.
      if (isDatabaseUnavailable(err)) {
        logger.warn({ err, rpc: req.url }, "rpc failed: the database is unavailable");
        throw unavailable("The database is unavailable. Retry in a few seconds.");
      }
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
    // gRPC server reflection (src/reflection) describes the schema, never data, and clients
    // such as grpcurl call it without credentials: it is the one exception, and needs no rule.
    if (req.service.typeName.startsWith("grpc.reflection.")) return next(req);
    const rule = getOption(req.method, authOption);
    const secret = bearerToken(req.header.get("authorization")) ??
      (rule.apiKeyHeader ? req.header.get("x-api-key")?.trim() || undefined : undefined);
    if (!secret) throw unauthenticated("Missing API key. Send it as a bearer token in the Authorization header.");
    const principal = await authenticator.authenticate(secret);
    if (!principal) throw unauthenticated("Invalid API key.");
    if (rule.permission === Permission.UNSPECIFIED || !roleAllows(principal.role, rule.permission)) {
      throw permissionDenied(`The ${Role[principal.role]} role may not call ${req.method.name}.`);
    }
    req.contextValues.set(principalKey, principal);
    return next(req);
  };
}

/**
 * PostgreSQL cannot take a NUL character in text, and its wire protocol refuses the whole query.
 * Checked once here for every string of every request, on every door, so no service has to.
 */
export function nulCharacterInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) {
      const path = findNul(req.method.input, req.message);
      if (path) throw invalidArgument(`${path} must not contain NUL characters`);
    }
    return next(req);
  };
}

function findNul(schema: DescMessage, message: unknown): string | undefined {
  const record = message as Record<string, unknown>;
  for (const field of schema.fields) {
    const oneof = field.oneof ? (record[field.oneof.localName] as { case?: string; value?: unknown }) : undefined;
    const value = field.oneof ? (oneof?.case === field.localName ? oneof.value : undefined) : record[field.localName];
    const values = field.fieldKind === "list" ? (value as unknown[]) : [value];
    for (const [i, item] of values.entries()) {
      const name = field.fieldKind === "list" ? `${field.jsonName}[${i}]` : field.jsonName;
      if (typeof item === "string" && item.includes("\u0000")) return name;
      if (item && typeof item === "object" && "$typeName" in item && field.message) {
        const inner = findNul(field.message, item);
        if (inner) return `${name}.${inner}`;
      }
    }
  }
  return undefined;
}

/** Every call gets its own EntityManager fork, made here and nowhere else. */
export function entityManagerInterceptor(orm: MikroORM): Interceptor {
  return (next) => async (req) => {
    req.contextValues.set(entityManagerKey, orm.em.fork());
    return next(req);
  };
}
