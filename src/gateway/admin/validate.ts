import { invalidArgument } from "../../platform/errors.ts";
import { requireText } from "../../platform/validate.ts";

const providerNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function providerName(field: string, value: string | undefined): string {
  const name = requireText(field, value, 64);
  if (!providerNamePattern.test(name)) {
    throw invalidArgument(`${field} may hold letters, digits, dots, dashes and underscores, and starts with a letter or digit`);
  }
  return name;
}

/** An http(s) URL without a trailing slash, query or fragment. */
export function baseUrl(value: string | undefined, field = "baseUrl"): string {
  const text = requireText(field, value, 2000);
  const url = URL.parse(text);
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.search || url.hash) {
    throw invalidArgument(`${field} must be an http or https URL without a query or fragment`);
  }
  return text.replace(/\/+$/, "");
}

/** The version path at the end of a provider's URL, by kind: the gateway adds it to every call itself. */
const versionPath: Record<string, RegExp> = {
  ANTHROPIC: /\/v1$/,
  OPENAI: /\/v1$/,
  AZURE_OPENAI: /\/openai(?:\/v1)?$/,
};

/**
 * A provider's base URL, as stored: given with its API's version path (`https://api.openai.com/v1`,
 * as OpenAI's docs write it) or without, it is stored without, since the gateway calls
 * `<base>/v1/…` (Azure: `<base>/openai/v1/…`). Answers show the stored form.
 */
export function providerBaseUrl(value: string | undefined, kind: string): string {
  return baseUrl(value).replace(versionPath[kind] ?? /\/v1$/, "");
}

export function boundedInt(field: string, value: number | undefined, fallback: number, min: number, max: number): number {
  const result = value ?? fallback;
  if (!Number.isInteger(result) || result < min || result > max) {
    throw invalidArgument(`${field} must be an integer from ${min} to ${max}`);
  }
  return result;
}

/** Model names and globs: non-empty, without spaces, at most 255 characters each. */
export function modelPatterns(field: string, models: string[], options: { atLeastOne: boolean }): string[] {
  if (options.atLeastOne && models.length === 0) throw invalidArgument(`${field} must name at least one model`);
  return models.map((model, i) => {
    const text = requireText(`${field}[${i}]`, model, 255);
    if (/\s/.test(text)) throw invalidArgument(`${field}[${i}] must not contain spaces`);
    return text;
  });
}
