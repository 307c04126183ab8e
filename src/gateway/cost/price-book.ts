import type { TokenUsage } from "../usage/provider-usage.ts";
import { bundledPrices, type ListPrice } from "./bundled-prices.ts";

/**
 * What a model's tokens cost, in whole micro-dollars per million tokens: so that tokens × price is
 * an exact whole number of pico-dollars (10⁻¹² USD), and no cost is ever a rounded float.
 */
export interface Price {
  input: number;
  output: number;
  /** Input tokens read from the provider's prompt cache; the input price when the model has no discount. */
  cachedInput: number;
}

/** A workspace's own price for a model, on one provider (by name) or on any. */
export interface PriceOverride {
  providerName: string | null;
  model: string;
  price: Price;
}

/** US dollars per million tokens as micro-dollars per million tokens. */
export function microsPerMillion(usd: number): number {
  return Math.round(usd * 1_000_000);
}

function priceOf(list: ListPrice): Price {
  const input = microsPerMillion(list.input);
  return { input, output: microsPerMillion(list.output), cachedInput: list.cachedInput === undefined ? input : microsPerMillion(list.cachedInput) };
}

/**
 * A model name without what versions it: a date (`claude-sonnet-4-5-20250929`,
 * `gpt-4o-2024-08-06`) or `-latest`; dated releases cost what their family costs.
 */
export function modelFamily(model: string): string {
  return model.replace(/-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$/, "");
}

const bundled = new Map(bundledPrices.map((list) => [list.model, priceOf(list)]));

/** Models whose price one book remembers per provider (priceOf). */
const MEMO_MODELS = 1_024;

/**
 * The prices one workspace pays. For a call to `model` on the provider named `providerName`, the
 * first that exists wins: the workspace's price for that provider and model, its price for the
 * model on any provider, the bundled list price; each tried for the exact name, then its family.
 */
export class PriceBook {
  readonly #overrides = new Map<string, Price>();
  /** The prices on one provider, by model name: what a model may cost wherever it is routed. */
  readonly #onProviders = new Map<string, Price[]>();

  constructor(overrides: readonly PriceOverride[] = []) {
    for (const override of overrides) {
      this.#overrides.set(PriceBook.#key(override.providerName, override.model), override.price);
      if (override.providerName !== null) this.#onProviders.set(override.model, [...(this.#onProviders.get(override.model) ?? []), override.price]);
    }
  }

  static #key(providerName: string | null, model: string): string {
    return `${providerName ?? ""}\u0000${model}`;
  }

  /**
   * What priceOf found, by provider name (undefined: any provider) and model. A call asks twice
   * (settling its limits, then its row), and each asking made up to six keys by concatenation
   * and looked each up: 3k instructions a call (docs/performance.md, "The gateway against the
   * bare proxy, by instruction"). The book never changes (a new snapshot makes a new one); a
   * provider's models are cleared past MEMO_MODELS, as the model names come from callers.
   */
  readonly #memo = new Map<string | undefined, Map<string, Price | null>>();

  /** Undefined when no price is known: the call's cost is then unknown (null in the request log). */
  priceOf(providerName: string | undefined, model: string): Price | undefined {
    let models = this.#memo.get(providerName);
    if (models === undefined) this.#memo.set(providerName, (models = new Map()));
    const known = models.get(model);
    if (known !== undefined) return known ?? undefined;
    const price = this.#find(providerName, model);
    if (models.size >= MEMO_MODELS) models.clear();
    models.set(model, price ?? null);
    return price;
  }

  #find(providerName: string | undefined, model: string): Price | undefined {
    const family = modelFamily(model);
    const names = family === model ? [model] : [model, family];
    for (const provider of providerName === undefined ? [null] : [providerName, null]) {
      for (const name of names) {
        const price = this.#overrides.get(PriceBook.#key(provider, name));
        if (price) return price;
      }
    }
    for (const name of names) {
      const price = bundled.get(name);
      if (price) return price;
    }
    return undefined;
  }

  /**
   * The most `model` can cost per token, whichever provider a call is routed to: each figure the
   * highest of its price on any provider and its prices on single providers. What a dollar limit
   * reserves by, before routing has chosen. Undefined when no price is known.
   */
  highestPriceOf(model: string): Price | undefined {
    const family = modelFamily(model);
    const candidates = [this.priceOf(undefined, model), ...(this.#onProviders.get(model) ?? []), ...(family === model ? [] : (this.#onProviders.get(family) ?? []))];
    const known = candidates.filter((price) => price !== undefined);
    if (known.length === 0) return undefined;
    return {
      input: Math.max(...known.map((price) => price.input)),
      output: Math.max(...known.map((price) => price.output)),
      cachedInput: Math.max(...known.map((price) => price.cachedInput)),
    };
  }
}

/** The bundled prices alone: what a workspace with no prices of its own pays. */
export const bundledPriceBook = new PriceBook();

/**
 * What `usage` cost at `price`, in pico-dollars. BigInt: a provider may report up to a trillion
 * tokens (MAX_REPORTED_TOKENS), which times a price passes what a double holds exactly.
 */
export function costOf(price: Price, usage: TokenUsage): bigint {
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  return (
    BigInt(usage.inputTokens - cached) * BigInt(price.input) +
    BigInt(cached) * BigInt(price.cachedInput) +
    BigInt(usage.outputTokens) * BigInt(price.output)
  );
}

const PICOS_PER_DOLLAR = 1_000_000_000_000n;

/** Pico-dollars as an exact decimal number of dollars, for PostgreSQL's numeric: 51000000n → "0.000051". */
export function dollarsText(picos: bigint): string {
  const sign = picos < 0n ? "-" : "";
  const abs = picos < 0n ? -picos : picos;
  const fraction = (abs % PICOS_PER_DOLLAR).toString().padStart(12, "0").replace(/0+$/, "");
  return `${sign}${abs / PICOS_PER_DOLLAR}${fraction ? `.${fraction}` : ""}`;
}
