import { invalidArgument } from "../../platform/errors.ts";
import { checkLength, requireText } from "../../platform/validate.ts";

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
  OPENAI_COMPATIBLE: /\/v1$/,
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

/** A model name sent upstream instead of the caller's: absent, or not blank. */
export function upstreamModelName(field: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  if (value.trim() === "") throw invalidArgument(`${field} must not be empty: leave it out to send the caller's model.`);
  return checkLength(field, value, 255);
}

export const maxRoutingTargets = 8;
export const maxTargetWeight = 1000;

export interface RoutingTargetInput {
  providerName: string;
  upstreamModel?: string | undefined;
  weight?: number | undefined;
}

export interface ValidRoutingTarget {
  providerName: string;
  upstreamModel: string | null;
  weight: number | null;
}

/**
 * A routing rule's targets, checked: 1 to 8; each names a provider (which need not exist yet: the
 * gateway then skips it), an optional upstream model and an optional weight from 0 to 1000; a
 * provider twice only with different upstream models; and, when any has a weight, one above 0.
 */
export function routingTargets(targets: readonly RoutingTargetInput[]): ValidRoutingTarget[] {
  if (targets.length < 1 || targets.length > maxRoutingTargets) {
    throw invalidArgument(`targets must list 1 to ${maxRoutingTargets} targets.`);
  }
  const valid = targets.map((target, i): ValidRoutingTarget => {
    const name = providerName(`targets[${i}].providerName`, target.providerName);
    const upstreamModel = upstreamModelName(`targets[${i}].upstreamModel`, target.upstreamModel);
    const weight = target.weight ?? null;
    if (weight !== null && (!Number.isInteger(weight) || weight < 0 || weight > maxTargetWeight)) {
      throw invalidArgument(`targets[${i}].weight must be an integer from 0 to ${maxTargetWeight}.`);
    }
    return { providerName: name, upstreamModel, weight };
  });
  checkRoutingTargets(valid);
  return valid;
}

/** What holds between a rule's targets: no repeat of a provider and upstream model, and some weight above 0 if any is weighted. */
export function checkRoutingTargets(targets: readonly ValidRoutingTarget[]): void {
  targets.forEach((target, i) => {
    const first = targets.findIndex((other) => other.providerName === target.providerName && other.upstreamModel === target.upstreamModel);
    if (first < i) {
      throw invalidArgument(`targets[${i}] repeats targets[${first}]: the same provider may appear twice only with different upstream models.`);
    }
  });
  if (targets.some((target) => target.weight !== null) && !targets.some((target) => (target.weight ?? 0) > 0)) {
    throw invalidArgument("targets: at least one weight must be above 0 (a target without a weight counts as 0 when another has one).");
  }
}
