import { isDatabaseUnavailable } from "../../db/unavailable.ts";
import type { GatewayKey, WorkspaceConfig } from "../config/types.ts";
import { databaseUnavailable, usageLimitReached } from "../dataplane/errors.ts";
import type { EndpointSpec } from "../endpoints/specs.ts";
import { callerText } from "../guardrails/text.ts";
import type { Refusal } from "./slice.ts";
import type { Hold, Slices } from "./slices.ts";
import type { LimitUnit, UsageLimit } from "./types.ts";
import { bundledPriceBook, costOf } from "../cost/price-book.ts";
import { MAX_REPORTED_TOKENS } from "../usage/provider-usage.ts";
import type { UsageStep, UsageTicket } from "./usage-step.ts";

/** Characters per token of the input estimate: a little generous, so that estimates err high. */
const charsPerToken = 3;

export interface LimitStepOptions {
  slices: Slices;
  /** What a request reserves for its output when it sets no maximum (the documented bound). */
  defaultMaxTokens: number;
  now?: () => Date;
}

const noTicket: UsageTicket = { settle: () => undefined };

/**
 * Usage limits, reserved at admission and settled at completion. A token limit reserves the
 * counted input plus the request's own output maximum (max_tokens, max_output_tokens), or the
 * default when it sets none: so concurrent requests cannot collectively pass a limit, except by
 * what requests without a maximum write beyond the default. A dollar limit reserves what that
 * would cost at the model's price, and settles the call's cost; a request limit reserves and
 * settles 1.
 *
 * Each unit's limits are taken together from one slice (slices.ts: this process's share of their
 * budget, held in the store), units one after the other (tokens, dollars, requests); a unit that
 * refuses gives back what the units before it took. Settling is local: the slices write usage to
 * the store in the background.
 */
export function createLimitStep(options: LimitStepOptions): UsageStep {
  const now = options.now ?? (() => new Date());
  return {
    admit({ key, config, spec, body }) {
      const units = unitsOf(config, key);
      if (units.length === 0) return noTicket;
      const input = countedInput(spec, body);
      const output = outputMaximum(spec, body, options.defaultMaxTokens);
      const amounts: Record<LimitUnit, () => number> = {
        tokens: () => input + output,
        usd: () => worstCaseMicros(config, body, input, output),
        requests: () => 1,
      };
      const at = now();
      const held: { unit: LimitUnit; hold: Hold }[] = [];
      const giveBack = () => {
        for (const { hold } of held) hold.slice.end(hold.amount, 0);
      };
      const keep = (unit: LimitUnit, taken: Hold | Refusal) => {
        if (!taken.ok) {
          giveBack();
          throw usageLimitReached(taken.limit.period, taken.resetsAt ?? undefined);
        }
        held.push({ unit, hold: taken });
      };
      const ticket: UsageTicket = {
        settle(usage, costPicos) {
          // Applied before the caller has its whole answer, so that its next request never finds
          // this call's reservation still held next to the usage it became. Local: the slice
          // writes it to the store with its next flush.
          const used: Record<LimitUnit, number> = usage
            ? { tokens: usage.inputTokens + usage.outputTokens, usd: costPicos === undefined ? 0 : micros(costPicos), requests: 1 }
            : { tokens: 0, usd: 0, requests: 0 };
          for (const { unit, hold } of held) hold.slice.end(hold.amount, used[unit]);
          return undefined;
        },
      };
      // Unit by unit; only a slice that must ask the store first makes the rest wait for it.
      const takeFrom = (first: number): UsageTicket | Promise<UsageTicket> => {
        for (let u = first; u < units.length; u++) {
          const { unit, limits } = units[u]!;
          const taken = options.slices.take(limits, amounts[unit](), at);
          if (taken instanceof Promise) {
            return taken.then(
              (answer) => {
                keep(unit, answer);
                return takeFrom(u + 1);
              },
              (err: unknown) => {
                giveBack();
                // The counters did not answer in time: the spec's 503, which the caller may retry.
                throw isDatabaseUnavailable(err) ? databaseUnavailable("the usage limits") : err;
              },
            );
          }
          keep(unit, taken);
        }
        return ticket;
      };
      return takeFrom(0);
    },
  };
}

const UNITS: readonly LimitUnit[] = ["tokens", "usd", "requests"];

/** A unit's limits on one key: taken together from one slice. */
interface UnitLimits {
  unit: LimitUnit;
  limits: readonly UsageLimit[];
}

/**
 * The key's limits by unit, in UNITS' order, units without any left out; kept per snapshot's
 * workspace and key (a changed limit or key comes in a new snapshot, with new objects), so that a
 * call neither filters the workspace's limits again nor hands the slices new arrays (slices.ts
 * keeps each array's slice key).
 */
const unitsByConfig = new WeakMap<WorkspaceConfig, WeakMap<GatewayKey, readonly UnitLimits[]>>();

function unitsOf(config: WorkspaceConfig | undefined, key: GatewayKey): readonly UnitLimits[] {
  if (!config || config.usageLimits.length === 0) return [];
  let byKey = unitsByConfig.get(config);
  if (!byKey) {
    byKey = new WeakMap();
    unitsByConfig.set(config, byKey);
  }
  let units = byKey.get(key);
  if (!units) {
    // The limits on the key, on its owner and on each of its groups.
    const limits = config.usageLimits.filter(
      (limit) =>
        (limit.scope === "key" && limit.subjectId === key.id) ||
        (limit.scope === "user" && limit.subjectId === key.userId) ||
        (limit.scope === "group" && key.groupIds.includes(limit.subjectId)),
    );
    units = UNITS.flatMap((unit) => {
      const ofUnit = limits.filter((limit) => limit.unit === unit);
      return ofUnit.length > 0 ? [{ unit, limits: ofUnit }] : [];
    });
    byKey.set(key, units);
  }
  return units;
}

/** Pico-dollars as whole micro-dollars, rounded up: a limit never counts a call as free that was not. */
function micros(picos: bigint): number {
  return Number((picos + 999_999n) / 1_000_000n);
}

/**
 * The most a call can cost before its provider is known: its input and output maxima at the
 * highest price the model asked for has on any provider (PriceBook.highestPriceOf). A model with no
 * known price reserves nothing and, as its cost is unknown, counts nothing either.
 */
function worstCaseMicros(config: WorkspaceConfig | undefined, body: Record<string, unknown>, input: number, output: number): number {
  const model = typeof body.model === "string" ? body.model : "";
  const price = (config?.prices ?? bundledPriceBook).highestPriceOf(model);
  return price ? micros(costOf(price, { inputTokens: input, outputTokens: output })) : 0;
}

/** An estimate of the input tokens from the caller's text, as guardrails read it. */
function countedInput(spec: EndpointSpec, body: Record<string, unknown>): number {
  const chars = callerText(spec, body).reduce((sum, part) => sum + part.length, 0);
  return Math.ceil(chars / charsPerToken);
}

/** The request's own output maximum, or `fallback` when it sets none; embeddings write no output tokens. */
function outputMaximum(spec: EndpointSpec, body: Record<string, unknown>, fallback: number): number {
  // A maximum past any context window (1e21 is valid JSON) reserves the most one request can count,
  // which no limit has room for: a 429, where the unclamped figure broke the counters' arithmetic.
  const value = spec.outputMaximum(body);
  return value === undefined ? fallback : Math.min(value, MAX_REPORTED_TOKENS);
}
