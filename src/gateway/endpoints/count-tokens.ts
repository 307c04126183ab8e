/** Characters per token of the estimate: about four for English prose, as OpenAI and Anthropic both put it. */
const charsPerToken = 4;

/**
 * Anthropic's count_tokens answer, estimated for a provider that has no such endpoint: the caller
 * text (system prompt, messages, tool results) and the tool definitions' JSON, at about four
 * characters a token. An estimate: a real tokenizer of the provider's model counts differently.
 */
export function estimatedTokenCount(callerText: readonly string[], tools: unknown): { input_tokens: number } {
  let chars = 0;
  for (const part of callerText) chars += part.length;
  if (Array.isArray(tools) && tools.length > 0) chars += JSON.stringify(tools).length;
  return { input_tokens: Math.ceil(chars / charsPerToken) };
}
