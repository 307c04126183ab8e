import type { ProviderKind } from "../config/types.ts";
import type { TypedUpstreamError } from "../providers/errors.ts";
import type { EndpointName } from "../endpoints/specs.ts";
import { isUpstreamError, UpstreamBodyTimeoutError, UpstreamTimeoutError } from "../providers/errors.ts";

/**
 * The gateway's one error vocabulary. Every message the gateway itself writes is made here, so
 * the texts quoted by the spec (docs/model-gateway.md, "Errors") exist in exactly one place; the
 * spec tells gateway messages from provider messages by these texts.
 */

import type { GuardrailKind, GuardrailStage } from "../config/types.ts";
import type { LimitPeriod } from "../limits/types.ts";

/** The images endpoint's `detail` object for a guardrail block. */
export interface GuardrailDetail {
  /** The guardrail's kind. */
  type: GuardrailKind;
  stage: GuardrailStage;
  reason: string;
}

export interface GatewayErrorOptions {
  retryAfter?: number;
  /** No retry can fix it: sent as `x-should-retry: false`, which both official SDKs honour. Default: see {@link retryCannotFix}. */
  final?: boolean;
  detailObject?: GuardrailDetail;
  /** Extra response headers, such as Allow on a 405. */
  headers?: Record<string, string>;
  /** The provider's failure, passed on (not a refusal of the gateway's own). */
  fromProvider?: boolean;
}

export class GatewayError extends Error {
  override readonly name = "GatewayError";
  readonly status: number;
  /** Seconds; sent as Retry-After only when set. */
  readonly retryAfter: number | undefined;
  readonly detailObject: GuardrailDetail | undefined;
  readonly headers: Record<string, string>;
  readonly final: boolean;
  readonly fromProvider: boolean;

  constructor(status: number, message: string, options: GatewayErrorOptions = {}) {
    super(message);
    this.status = status;
    this.retryAfter = options.retryAfter;
    this.final = options.final ?? retryCannotFix(status, options.retryAfter);
    this.detailObject = options.detailObject;
    this.headers = options.headers ?? {};
    this.fromProvider = options.fromProvider ?? false;
  }
}

/**
 * Whether a retry cannot fix an error, by its status: a 4xx (the request, the key, the access
 * rules or a guardrail must change) but the ones the SDKs retry for good reason (408, 409, a
 * provider's 429), and a 503 without Retry-After (the gateway is not set up for the call; the
 * capacity and loading 503s say when to retry). The official SDKs retry 408, 409, 429 and 5xx
 * unless told `x-should-retry: false`.
 */
function retryCannotFix(status: number, retryAfter: number | undefined): boolean {
  if (status >= 400 && status < 500) return status !== 408 && status !== 409 && status !== 429;
  return status === 503 && retryAfter === undefined;
}

const CONTACT = "If this is unexpected, contact your administrator.";

/** The spec's cap on models named in an allow-list 403. */
export const MAX_MODELS_NAMED = 5;

// 400

export const streamingImagesUnsupported = () =>
  new GatewayError(400, "Streaming image generation is not supported.");
export const bodyNotJsonObject = () => new GatewayError(400, "The request body must be a JSON object.");
export const bodyWithoutModel = () =>
  new GatewayError(400, "The request body must name a model: 'model' is missing or is not a non-empty string.");

/**
 * The call is routed to a provider that speaks another format, and something in the request has
 * no faithful equivalent there (a provider-only built-in tool, a stateful reference, two answers
 * at once): refused rather than dropped. `detail` is one sentence saying what, ending with a period.
 */
export const untranslatable = (detail: string) =>
  new GatewayError(400, `This request cannot be translated for the provider it is routed to: ${detail}`);

// 401

export const missingApiKey = () =>
  new GatewayError(401, "Missing API key. Send your gateway key as 'Authorization: Bearer <key>' or in the 'x-api-key' header.");
/** Unknown and deleted keys alike: a deleted key is not told apart from one that never existed. */
export const invalidApiKey = () => new GatewayError(401, "Invalid API key.");
export const disabledApiKey = () => new GatewayError(401, "Invalid API key. This key is disabled.");

// 403

export const modelBlocked = (model: string) =>
  new GatewayError(403, `The model '${model}' is not available through this gateway. ${CONTACT}`);

/**
 * Names the first five distinct models of `available`, in the order given (the caller's order,
 * e.g. the allow list as configured). With none, a sentence saying so takes the list's place, so
 * the message still ends with the closing sentence.
 */
export function modelNotAllowed(model: string, available: readonly string[]): GatewayError {
  const names = [...new Set(available)].slice(0, MAX_MODELS_NAMED);
  const list =
    names.length > 0 ? `Available models include: ${names.join(", ")}.` : "No models are available to this API key.";
  return new GatewayError(403, `The model '${model}' is not available to this API key. ${list} ${CONTACT}`);
}

// 404, 405, 413: outside the spec's table; the type follows the status (405 and 413 are "other
// 4xx", invalid_request_error, as a malformed request is: the caller must change the request).

export const unknownPath = (path: string) => new GatewayError(404, `There is no endpoint at '${path}'.`);
export const methodNotAllowed = (method: string, path: string, allowed: readonly string[]) =>
  new GatewayError(405, `Method ${method} is not allowed on '${path}'. Allowed: ${allowed.join(", ")}.`, {
    headers: { allow: allowed.join(", ") },
  });
export const bodyTooLarge = (maxBytes: number) =>
  new GatewayError(413, `The request body is too large: at most ${maxBytes} bytes are accepted.`);

// 422: the message is the guardrail's reason alone; it names neither the guardrail nor the stage.

/** Two decimals, always, so that the same content gives byte-identical answers. */
const score = (n: number) => n.toFixed(2);

/** Entity types sorted and distinct, for the same reason. */
export const piiReason = (entityTypes: readonly string[]) =>
  `Detected high-risk PII entities: ${[...new Set(entityTypes)].sort().join(", ")}`;
export const promptInjectionReason = (value: number) => `Detected prompt injection attempt (score: ${score(value)})`;
export const toxicContentReason = (category: string, value: number, threshold: number) =>
  `Detected toxic content: ${category}=${score(value)} (threshold: ${score(threshold)})`;

export const guardrailBlocked = (type: GuardrailKind, stage: GuardrailStage, reason: string) =>
  new GatewayError(422, reason, { detailObject: { type, stage, reason } });

// 429: a usage limit; no Retry-After, since a retry fails until the period resets.

/** `resetsAt` is the UTC start of the next period; it is written as its UTC date, YYYY-MM-DD. */
export function usageLimitReached(period: LimitPeriod, resetsAt?: Date): GatewayError {
  let text: string;
  if (period === "all_time") text = "You've reached your usage limit.";
  else if (period === "daily") text = "You've reached the daily limit. Your limit will reset tomorrow.";
  else {
    if (resetsAt === undefined) throw new Error(`a ${period} limit needs its reset date`);
    text = `You've reached the ${period} limit. Your limit will reset on ${resetsAt.toISOString().slice(0, 10)}.`;
  }
  return new GatewayError(429, `${text} ${CONTACT}`, { final: true });
}

// 503, in the spec's order. Retry-After: 1 for capacity, 5 for loading or database, else none.

export const gatewayAtCapacity = () =>
  new GatewayError(503, "gateway at capacity: too many requests in flight. Retry shortly.", { retryAfter: 1 });
export const noUpstreamCapacity = (provider: string) =>
  new GatewayError(503, `no upstream capacity for provider '${provider}': too many calls in flight. Retry shortly.`, {
    retryAfter: 1,
  });

const guardrailLabels: Record<GuardrailKind, string> = {
  pii: "PII",
  prompt_injection: "prompt injection",
  content_safety: "content safety",
};
export const guardrailLoading = (kind: GuardrailKind) =>
  new GatewayError(503, `The ${guardrailLabels[kind]} guardrail is still loading. Retry in a few seconds.`, {
    retryAfter: 5,
  });
/** The spec fixes the message's start; the rest says what could not be checked. */
export const databaseUnavailable = (what: "the API key" | "the usage limits") =>
  new GatewayError(503, `The gateway's database is unavailable: ${what} could not be checked in time. Retry in a few seconds.`, {
    retryAfter: 5,
  });
export const noProviderApiKey = (provider: string) =>
  new GatewayError(503, `No API key is configured for provider '${provider}'. An administrator must store one.`);
export const providerNotConfigured = (provider: string) =>
  new GatewayError(
    503,
    `Provider '${provider}' is not configured. A routing rule targets it: create the provider or change the rule's target.`,
  );

const kindLabels: Record<ProviderKind, string> = {
  anthropic: "Anthropic",
  openai: "OpenAI",
  azure_openai: "Azure OpenAI",
  openai_compatible: "OpenAI-compatible",
};
const endpointLabels: Record<EndpointName, string> = {
  messages: "the messages API",
  responses: "the responses API",
  chat: "chat completions",
  embeddings: "embeddings",
  images: "image generation",
  count_tokens: "token counting",
};
/** Every kind serves the three conversational endpoints (translated where it speaks another format). */
const servedBy: Record<EndpointName, string> = {
  messages: "any provider",
  responses: "any provider",
  chat: "any provider",
  embeddings: "an OpenAI, Azure OpenAI or OpenAI-compatible provider",
  images: "an OpenAI or Azure OpenAI provider",
  count_tokens: "any provider",
};

/** The spec's case: the matched rule targets a provider whose kind cannot serve the endpoint (embeddings, image generation); names the kinds that can. */
export const routingRuleWrongProvider = (provider: string, kind: ProviderKind, endpoint: EndpointName) =>
  new GatewayError(
    503,
    `The routing rule for this request targets provider '${provider}' (${kindLabels[kind]}), which does not serve ${endpointLabels[endpoint]}. Point the rule at ${servedBy[endpoint]}.`,
  );
/** Embeddings matched by a model-based rule: embeddings route only through rules that list no models. */
export const routingRuleModelBasedEmbeddings = (provider: string) =>
  new GatewayError(
    503,
    `The routing rule for this request targets provider '${provider}' by model name, and embeddings cannot be routed by model. Add a routing rule that lists no models and targets an OpenAI or Azure OpenAI provider.`,
  );
export const noRoutingRule = (model: string) =>
  new GatewayError(
    503,
    `No routing rule resolves requests for model '${model}'. Add a routing rule that matches it, or one that lists no models.`,
  );

// 502 and 504: the provider's failures.

/** 4xx keep the provider's status (429 included), 5xx and anything else become 502; message kept. */
export function providerErrorToGatewayError(status: number, providerMessage: string): GatewayError {
  return new GatewayError(status >= 400 && status < 500 ? status : 502, providerMessage, { fromProvider: true });
}

/** A translated call's answer (or stream event) that is not what its format says: the provider's fault. */
export const UNREADABLE_ANSWER_PREFIX = "The provider's answer could not be read: ";
export const unreadableAnswer = (detail: string) => new GatewayError(502, `${UNREADABLE_ANSWER_PREFIX}${detail}`, { fromProvider: true });

export const UPSTREAM_TIMEOUT_MESSAGE = "The provider did not answer in time.";
export const UPSTREAM_BODY_TIMEOUT_MESSAGE = "The provider stopped sending its response before it was complete.";
export const UPSTREAM_UNREACHABLE_MESSAGE = "The provider could not be reached or closed the connection without answering.";
export const UPSTREAM_DROPPED_MESSAGE = "The provider closed the connection before its response was complete.";

/** Timeouts are 504 ("did not answer in time"), connection failures 502. */
export function gatewayErrorForUpstream(err: TypedUpstreamError): GatewayError {
  const fromProvider = true;
  if (err instanceof UpstreamTimeoutError) return new GatewayError(504, UPSTREAM_TIMEOUT_MESSAGE, { fromProvider });
  if (err instanceof UpstreamBodyTimeoutError) return new GatewayError(504, UPSTREAM_BODY_TIMEOUT_MESSAGE, { fromProvider });
  return new GatewayError(502, err.phase === "request" ? UPSTREAM_UNREACHABLE_MESSAGE : UPSTREAM_DROPPED_MESSAGE, { fromProvider });
}

/** 500 is not in the spec's table: it is only for bugs, and says nothing of them. */
export const internalError = () => new GatewayError(500, "The gateway failed to handle this request.");

/** Any thrown value as the error to render. */
export function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (isUpstreamError(err)) return gatewayErrorForUpstream(err);
  return internalError();
}

// Rendering

export type EndpointStyle = "messages" | "responses" | "images";

export function errorTypeFor(status: number): string {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
  }
  if (status >= 400 && status < 500) return "invalid_request_error";
  return "api_error";
}

export interface RenderedError {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function renderError(style: EndpointStyle, error: GatewayError): RenderedError {
  const type = errorTypeFor(error.status);
  let body: string;
  if (style === "messages") {
    body = JSON.stringify({ type: "error", error: { type, message: error.message } });
  } else if (style === "responses") {
    body = JSON.stringify({ error: { message: error.message, type, param: null, code: null } });
  } else {
    body = JSON.stringify({ detail: error.detailObject ?? error.message });
  }
  const headers: Record<string, string> = { ...error.headers, "content-type": "application/json" };
  if (error.retryAfter !== undefined) headers["retry-after"] = String(error.retryAfter);
  if (error.final) headers["x-should-retry"] = "false";
  return { status: error.status, headers, body };
}

/** The path prefixes of the family-specific model lists: /anthropic/v1/models, /openai/v1/models. */
export const MESSAGES_FAMILY_PREFIX = "/anthropic";
export const RESPONSES_FAMILY_PREFIX = "/openai";

/**
 * The error style of a model listing: by prefix, else by client: the Anthropic client libraries
 * always send anthropic-version, the OpenAI ones never do.
 */
export function styleForModels(pathPrefix: string, headers: Pick<Headers, "get">): EndpointStyle {
  if (pathPrefix === MESSAGES_FAMILY_PREFIX) return "messages";
  if (pathPrefix === RESPONSES_FAMILY_PREFIX) return "responses";
  return headers.get("anthropic-version") !== null ? "messages" : "responses";
}
