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
