import type { Family, ProviderKind } from "../config/types.ts";
import type { EndpointStyle } from "../dataplane/errors.ts";
import type { FormatName } from "../formats/format.ts";
import type { TranscriptEndpoint } from "../usage/transcript.ts";
import {
  answerText,
  chatOperatorParts,
  chatText,
  embeddingsText,
  imagesText,
  messagesOperatorParts,
  messagesText,
  responsesOperatorParts,
  responsesText,
  rewriteAnswerText,
  rewriteChatText,
  rewriteImagesText,
  rewriteMessagesText,
  rewriteResponsesText,
  type TextRewrite,
} from "./caller-text.ts";

/**
 * Everything the gateway knows of one client endpoint, in one place: where it is, how its errors
 * look, where its caller text and output maximum are, and what each provider kind is sent for it
 * (its own format, or another one it is translated to). The pipeline's steps are the same for
 * every endpoint; they read what differs from here.
 */

export type EndpointName = "messages" | "responses" | "chat" | "embeddings" | "images" | "count_tokens";

/** What a provider of some kind is sent for a call: the path below its base URL, and the format. */
export interface ProviderTarget {
  /** Below the base URL (Azure's `/openai` is added by the upstream). */
  path: string;
  /** The format the provider speaks here; a translated call is read from and written to it. */
  format: FormatName | null;
  /** The gateway answers itself, with an estimate, instead of calling the provider. */
  estimated?: true;
}

export interface EndpointSpec {
  name: EndpointName;
  /** Below /v1 of the gateway, and of a family prefix. */
  path: string;
  /** The family whose prefix (/anthropic, /openai) also serves it. */
  family: Family;
  /** How its errors look. */
  style: EndpointStyle;
  /** The client format, for the endpoints that translate: null for embeddings and images. */
  format: FormatName | null;
  /** Whether guardrails read its input and output. */
  guardrails: boolean;
  /** Whether a call generates output: usage limits reserve for it, and its traffic becomes pipeline rows. */
  generates: boolean;
  /** The body fields that carry caller text (a large body's summary stands in for them). */
  textFields: readonly string[];
  /** The caller text of a parsed request body. */
  inputText(body: Record<string, unknown>): string[];
  /** How many of inputText's first parts are the operator's own (the system prompt, instructions). */
  operatorParts(body: Record<string, unknown>): number;
  /** The same text rewritten in place (PII redaction); only endpoints with guardrails rewrite. */
  rewriteInputText(body: Record<string, unknown>, rewrite: TextRewrite): void;
  /** The request's own output maximum, or undefined when it sets none (embeddings write none: 0). */
  outputMaximum(body: Record<string, unknown>): number | undefined;
  /** The text of a non-streamed answer, parsed. */
  outputText(answer: unknown): string[];
  /** That text rewritten in place. */
  rewriteOutputText(answer: unknown, rewrite: TextRewrite): void;
  transcript: TranscriptEndpoint;
  /** What a provider of this kind is sent; undefined when no such provider can serve the endpoint. */
  target(kind: ProviderKind): ProviderTarget | undefined;
}

/** The formats each provider kind speaks, its preferred one first (what another format is translated to). */
const nativeFormats: Record<ProviderKind, readonly FormatName[]> = {
  anthropic: ["messages"],
  openai: ["responses", "chat"],
  azure_openai: ["responses", "chat"],
  openai_compatible: ["chat"],
};

const formatPaths: Record<FormatName, string> = {
  messages: "/v1/messages",
  responses: "/v1/responses",
  chat: "/v1/chat/completions",
};

/** A client format reaches every kind: natively when the kind speaks it, else translated to the kind's own. */
function conversational(format: FormatName) {
  return (kind: ProviderKind): ProviderTarget => {
    const formats = nativeFormats[kind];
    const spoken = formats.includes(format) ? format : formats[0]!;
    return { path: formatPaths[spoken], format: spoken };
  };
}

/** Only these kinds serve it, at this path, as it is. */
function passThrough(path: string, kinds: readonly ProviderKind[]) {
  return (kind: ProviderKind): ProviderTarget | undefined => (kinds.includes(kind) ? { path, format: null } : undefined);
}

/** A positive integer maximum, clamped by the caller of outputMaximum; anything else is none. */
const maximum = (value: unknown): number | undefined => (typeof value === "number" && Number.isInteger(value) && value > 0 ? value : undefined);

export const endpointSpecs: Record<EndpointName, EndpointSpec> = {
  messages: {
    name: "messages",
    path: "/v1/messages",
    family: "messages",
    style: "messages",
    format: "messages",
    guardrails: true,
    generates: true,
    textFields: ["system", "messages"],
    inputText: messagesText,
    operatorParts: messagesOperatorParts,
    rewriteInputText: rewriteMessagesText,
    outputMaximum: (body) => maximum(body.max_tokens),
    outputText: answerText,
    rewriteOutputText: rewriteAnswerText,
    transcript: "messages",
    target: conversational("messages"),
  },
  responses: {
    name: "responses",
    path: "/v1/responses",
    family: "responses",
    style: "responses",
    format: "responses",
    guardrails: true,
    generates: true,
    textFields: ["instructions", "input"],
    inputText: responsesText,
    operatorParts: responsesOperatorParts,
    rewriteInputText: rewriteResponsesText,
    outputMaximum: (body) => maximum(body.max_output_tokens),
    outputText: answerText,
    rewriteOutputText: rewriteAnswerText,
    transcript: "responses",
    target: conversational("responses"),
  },
  chat: {
    name: "chat",
    path: "/v1/chat/completions",
    family: "responses",
    style: "responses",
    format: "chat",
    guardrails: true,
    generates: true,
    textFields: ["messages"],
    inputText: chatText,
    operatorParts: chatOperatorParts,
    rewriteInputText: rewriteChatText,
    // max_tokens is deprecated in favour of max_completion_tokens; OpenAI refuses both at once.
    outputMaximum: (body) => maximum(body.max_completion_tokens) ?? maximum(body.max_tokens),
    outputText: answerText,
    rewriteOutputText: rewriteAnswerText,
    transcript: "chat",
    target: conversational("chat"),
  },
  embeddings: {
    name: "embeddings",
    path: "/v1/embeddings",
    family: "responses",
    style: "responses",
    format: null,
    guardrails: false,
    generates: true,
    textFields: ["input"],
    inputText: embeddingsText,
    operatorParts: () => 0,
    rewriteInputText: () => undefined,
    outputMaximum: () => 0,
    outputText: () => [],
    rewriteOutputText: () => undefined,
    transcript: "embeddings",
    target: passThrough("/v1/embeddings", ["openai", "azure_openai", "openai_compatible"]),
  },
  images: {
    name: "images",
    path: "/v1/images/generations",
    family: "responses",
    style: "images",
    format: null,
    guardrails: true,
    generates: true,
    textFields: ["prompt"],
    inputText: imagesText,
    operatorParts: () => 0,
    rewriteInputText: rewriteImagesText,
    outputMaximum: () => undefined,
    outputText: answerText,
    rewriteOutputText: rewriteAnswerText,
    transcript: "images",
    target: passThrough("/v1/images/generations", ["openai", "azure_openai"]),
  },
  count_tokens: {
    name: "count_tokens",
    path: "/v1/messages/count_tokens",
    family: "messages",
    style: "messages",
    format: null,
    // Counting generates nothing and costs nothing: no guardrail, limit or pipeline row.
    guardrails: false,
    generates: false,
    textFields: ["system", "messages"],
    inputText: messagesText,
    operatorParts: messagesOperatorParts,
    rewriteInputText: rewriteMessagesText,
    outputMaximum: () => 0,
    outputText: () => [],
    rewriteOutputText: () => undefined,
    transcript: "messages",
    // Anthropic counts; for the others, which have no such endpoint, the gateway estimates.
    target: (kind) => (kind === "anthropic" ? { path: "/v1/messages/count_tokens", format: null } : { path: "", format: null, estimated: true }),
  },
};

/** The endpoint a request path names, below /v1 (its family prefix already taken off). */
export const endpointByPath: ReadonlyMap<string, EndpointSpec> = new Map(Object.values(endpointSpecs).map((spec) => [spec.path, spec]));
