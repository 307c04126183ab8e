import { isDatabaseUnavailable } from "../../db/unavailable.ts";
import type { Logger } from "../../platform/logger.ts";
import type { GatewayKey, WorkspaceConfig } from "../config/types.ts";
import { databaseUnavailable, usageLimitReached } from "../dataplane/errors.ts";
import type { EndpointSpec } from "../endpoints/specs.ts";
import { callerText } from "../guardrails/text.ts";
import type { CounterStore, UsageLimit } from "./types.ts";
import { MAX_REPORTED_TOKENS } from "../usage/provider-usage.ts";
import type { UsageStep, UsageTicket } from "./usage-step.ts";

/** Characters per token of the input estimate: a little generous, so that estimates err high. */
const charsPerToken = 3;

export interface LimitStepOptions {
  store: CounterStore;
  logger: Logger;
  /** What a request reserves for its output when it sets no maximum (the documented bound). */
  defaultMaxTokens: number;
  now?: () => Date;
}

const noTicket: UsageTicket = { settle: async () => undefined };

/**
 * Usage limits, reserved at admission and settled at completion. The reservation is the counted
 * input plus the request's own output maximum (max_tokens, max_output_tokens), or the default
 * when it sets none: so concurrent requests cannot collectively pass a limit, except by what
 * requests without a maximum write beyond the default.
 */
export function createLimitStep(options: LimitStepOptions): UsageStep {
  const now = options.now ?? (() => new Date());
  return {
    async admit({ key, config, spec, body }) {
      const limits = limitsFor(config, key);
      if (limits.length === 0) return noTicket;
      const amount = countedInput(spec, body) + outputMaximum(spec, body, options.defaultMaxTokens);
      const result = await options.store.reserve(limits, amount, now()).catch((err: unknown) => {
        // The counters did not answer in time: the spec's 503, which the caller may retry.
        throw isDatabaseUnavailable(err) ? databaseUnavailable("the usage limits") : err;
      });
      if (!result.ok) throw usageLimitReached(result.limit.period, result.resetsAt ?? undefined);
      const reservation = result.reservation;
      return {
        settle(usage) {
          // Applied before the caller has its whole answer, so that its next request never finds
          // this reservation still held next to the usage it became (when settles ran after the
          // answer, a limit with room refused back-to-back calls). A settle that fails leaves the
          // reservation to the sweep; the caller still gets the answer that was generated.
          const done = usage
            ? options.store.settle(reservation, usage.inputTokens + usage.outputTokens)
            : options.store.release(reservation);
          return done.catch((err: unknown) => options.logger.error({ err, reservation: reservation.id }, "could not settle usage"));
        },
      };
    },
  };
}

/** The limits on the key, on its owner and on each of its groups. */
export function limitsFor(config: WorkspaceConfig | undefined, key: GatewayKey): UsageLimit[] {
  if (!config || config.usageLimits.length === 0) return [];
  return config.usageLimits.filter(
    (limit) =>
      (limit.scope === "key" && limit.subjectId === key.id) ||
      (limit.scope === "user" && limit.subjectId === key.userId) ||
      (limit.scope === "group" && key.groupIds.includes(limit.subjectId)),
  );
}

/** An estimate of the input tokens from the caller's text, as guardrails read it. */
export function countedInput(spec: EndpointSpec, body: Record<string, unknown>): number {
  const chars = callerText(spec, body).reduce((sum, part) => sum + part.length, 0);
  return Math.ceil(chars / charsPerToken);
}

/** The request's own output maximum, or `fallback` when it sets none; embeddings write no output tokens. */
export function outputMaximum(spec: EndpointSpec, body: Record<string, unknown>, fallback: number): number {
  // A maximum past any context window (1e21 is valid JSON) reserves the most one request can count,
  // which no limit has room for: a 429, where the unclamped figure broke the counters' arithmetic.
  const value = spec.outputMaximum(body);
  return value === undefined ? fallback : Math.min(value, MAX_REPORTED_TOKENS);
}
