import type { Family } from "../config/types.ts";
import type { UpstreamEndpoint } from "../providers/upstream.ts";
import { MESSAGES_FAMILY_PREFIX, RESPONSES_FAMILY_PREFIX, type EndpointStyle } from "./errors.ts";

export type Endpoint =
  | { kind: "call"; endpoint: UpstreamEndpoint; style: EndpointStyle; family: Family; guardrails: boolean }
  | { kind: "models"; prefix: string };

/** The provider-style calls, and where an SDK's base URL may put them. */
const calls: Record<string, Endpoint & { kind: "call" }> = {
  "/v1/messages": { kind: "call", endpoint: "messages", style: "messages", family: "messages", guardrails: true },
  "/v1/responses": { kind: "call", endpoint: "responses", style: "responses", family: "responses", guardrails: true },
  "/v1/embeddings": { kind: "call", endpoint: "embeddings", style: "responses", family: "responses", guardrails: false },
  "/v1/images/generations": { kind: "call", endpoint: "images", style: "images", family: "responses", guardrails: true },
};

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
    const call = calls[rest];
    if (call && (prefix === "" || prefixFamily(prefix) === call.family)) return { endpoint: call, method: "POST" };
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
