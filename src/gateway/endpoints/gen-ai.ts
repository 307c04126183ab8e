import type { ProviderKind } from "../config/types.ts";

/**
 * The OpenTelemetry GenAI semantic conventions' names for what the gateway serves, shared by the
 * metrics and the spans so that both name a request the same way.
 */

/** `gen_ai.operation.name` of each endpoint; undefined for what is not a model call (model lists). */
const operations: Record<string, string> = {
  messages: "chat",
  responses: "chat",
  chat: "chat",
  embeddings: "embeddings",
  images: "generate_content",
  count_tokens: "count_tokens",
};

export function genAiOperation(endpoint: string): string | undefined {
  return operations[endpoint];
}

/** `gen_ai.provider.name`: the conventions' well-known value of each kind of provider. */
const providerNames: Record<ProviderKind, string> = {
  anthropic: "anthropic",
  openai: "openai",
  azure_openai: "azure.ai.openai",
  // No well-known value: the conventions ask for a custom one.
  openai_compatible: "openai_compatible",
};

export function genAiProviderName(kind: ProviderKind): string {
  return providerNames[kind];
}
