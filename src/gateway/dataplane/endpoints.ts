import type { Family } from "../config/types.ts";
import { endpointByPath, type EndpointSpec } from "../endpoints/specs.ts";
import { MESSAGES_FAMILY_PREFIX, RESPONSES_FAMILY_PREFIX, type EndpointStyle } from "./errors.ts";

export type Endpoint = { kind: "call"; spec: EndpointSpec } | { kind: "models"; prefix: string };

export interface EndpointMatch {
  endpoint: Endpoint;
  method: "GET" | "POST";
}

/**
 * The gateway's paths: the calls under /v1, also below their family's prefix (an SDK pointed at
 * <gateway>/anthropic or <gateway>/openai), and the model lists at /v1/models and under each
 * family's prefix.
 */
export function matchEndpoint(pathname: string): EndpointMatch | undefined {
  for (const prefix of ["", MESSAGES_FAMILY_PREFIX, RESPONSES_FAMILY_PREFIX]) {
    if (prefix && !pathname.startsWith(prefix + "/")) continue;
    const rest = pathname.slice(prefix.length);
    if (rest === "/v1/models") return { endpoint: { kind: "models", prefix }, method: "GET" };
    const spec = endpointByPath.get(rest);
    if (spec && (prefix === "" || prefixFamily(prefix) === spec.family)) return { endpoint: { kind: "call", spec }, method: "POST" };
  }
  return undefined;
}

function prefixFamily(prefix: string): Family {
  return prefix === MESSAGES_FAMILY_PREFIX ? "messages" : "responses";
}

/** The error style of a path that matched nothing: the family its prefix or name suggests. */
export function styleForUnknownPath(pathname: string): EndpointStyle {
  if (pathname.startsWith(MESSAGES_FAMILY_PREFIX + "/") || pathname.includes("/messages")) return "messages";
  if (pathname.includes("/images")) return "images";
  return "responses";
}
