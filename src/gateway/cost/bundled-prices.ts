/**
 * List prices of the common Anthropic and OpenAI models, in US dollars per million tokens, as the
 * providers publish them (anthropic.com/pricing, openai.com/api/pricing; figures as of 2026-11,
 * standard tier, no batch discount). A workspace overrides any of them, or adds others, through the
 * admin API (`/v1/gateway/prices`); docs/cost.md says how a model name finds its price.
 *
 * `cachedInput` is the price of input tokens read from the provider's prompt cache (Anthropic's
 * cache reads, OpenAI's cached input); undefined where the model has no cache discount.
 */
export interface ListPrice {
  model: string;
  input: number;
  output: number;
  cachedInput?: number;
}

export const BUNDLED_PRICES_DATE = "2026-11";

export const bundledPrices: readonly ListPrice[] = [
  // Anthropic
  { model: "claude-opus-4-1", input: 15, output: 75, cachedInput: 1.5 },
  { model: "claude-opus-4-0", input: 15, output: 75, cachedInput: 1.5 },
  { model: "claude-opus-4", input: 15, output: 75, cachedInput: 1.5 },
  { model: "claude-opus-4-5", input: 5, output: 25, cachedInput: 0.5 },
  { model: "claude-sonnet-4-5", input: 3, output: 15, cachedInput: 0.3 },
  { model: "claude-sonnet-4-0", input: 3, output: 15, cachedInput: 0.3 },
  { model: "claude-sonnet-4", input: 3, output: 15, cachedInput: 0.3 },
  { model: "claude-3-7-sonnet", input: 3, output: 15, cachedInput: 0.3 },
  { model: "claude-3-5-sonnet", input: 3, output: 15, cachedInput: 0.3 },
  { model: "claude-haiku-4-5", input: 1, output: 5, cachedInput: 0.1 },
  { model: "claude-3-5-haiku", input: 0.8, output: 4, cachedInput: 0.08 },
  { model: "claude-3-opus", input: 15, output: 75, cachedInput: 1.5 },
  { model: "claude-3-haiku", input: 0.25, output: 1.25, cachedInput: 0.03 },
  // OpenAI
  { model: "gpt-5", input: 1.25, output: 10, cachedInput: 0.125 },
  { model: "gpt-5-mini", input: 0.25, output: 2, cachedInput: 0.025 },
  { model: "gpt-5-nano", input: 0.05, output: 0.4, cachedInput: 0.005 },
  { model: "gpt-4.1", input: 2, output: 8, cachedInput: 0.5 },
  { model: "gpt-4.1-mini", input: 0.4, output: 1.6, cachedInput: 0.1 },
  { model: "gpt-4.1-nano", input: 0.1, output: 0.4, cachedInput: 0.025 },
  { model: "gpt-4o", input: 2.5, output: 10, cachedInput: 1.25 },
  { model: "gpt-4o-mini", input: 0.15, output: 0.6, cachedInput: 0.075 },
  { model: "o1", input: 15, output: 60, cachedInput: 7.5 },
  { model: "o3", input: 2, output: 8, cachedInput: 0.5 },
  { model: "o3-mini", input: 1.1, output: 4.4, cachedInput: 0.55 },
  { model: "o4-mini", input: 1.1, output: 4.4, cachedInput: 0.275 },
  { model: "text-embedding-3-small", input: 0.02, output: 0 },
  { model: "text-embedding-3-large", input: 0.13, output: 0 },
  { model: "text-embedding-ada-002", input: 0.1, output: 0 },
];
