import { Gauge, type Registry } from "prom-client";
import { SeriesCounter, SeriesHistogram, type CounterSeries, type HistogramSeries } from "../../platform/series-metrics.ts";
import { GatewayError, UNREADABLE_ANSWER_PREFIX } from "../dataplane/errors.ts";
import { UpstreamBodyTimeoutError, UpstreamConnectionError, UpstreamTimeoutError } from "../providers/errors.ts";
import { genAiOperation } from "../endpoints/gen-ai.ts";
import type { TokenUsage } from "./provider-usage.ts";

/**
 * The gateway's Prometheus metrics. Where the OpenTelemetry GenAI semantic conventions define a
 * metric, its name and attributes are theirs, mapped as OpenTelemetry's Prometheus exporter maps
 * them (dots to underscores, the unit as a suffix: `gen_ai.server.request.duration` in seconds is
 * `gen_ai_server_request_duration_seconds`; `{token}` is an annotation and adds nothing). The
 * rest are Warden's own, under `warden_gateway_`. Every metric is listed in docs/operations.md.
 */

/** The conventions' advisory buckets (seconds; tokens). */
const durationBuckets = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const firstTokenBuckets = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const tokenBuckets = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
/** The gateway's own time is counted in tenths of a millisecond to tens of milliseconds. */
const overheadBuckets = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/**
 * At most this many model names become label values; the rest are counted as "other". Callers
 * choose model names, and a catch-all rule routes any of them: without a bound, one caller could
 * grow the metrics (and every scrape) without end.
 */
const MAX_MODELS = 200;

/**
 * One request as the metrics see it, when it has ended: the pipeline's record of the request
 * (its Trace) is one, handed over as it is rather than copied into a measure for every request.
 */
export interface RequestMeasure {
  readonly endpoint: string;
  readonly provider?: string;
  readonly model?: string;
  /** The spec's error type, for an error answer. */
  readonly errorType?: string;
  /** To the first byte of the answer, when one was sent. */
  readonly ttfbMs?: number;
  readonly usage?: TokenUsage;
  /** The gateway's own time before it called the provider (absent: it never did). */
  readonly overheadMs?: number;
  /** Why the gateway refused the request itself (not a provider's error); absent when it did not. */
  readonly refusal?: string;
}

/**
 * The series one kind of request counts into (endpoint, provider, model, status and error type
 * decide every label), looked up on its first request and then counted into directly. Histogram
 * series are made when first observed, as prom-client would: a series that never saw a value is
 * not listed.
 */
interface RequestSeries {
  /** The provider and model as label values (an unknown model past MAX_MODELS is "other"). */
  provider: string;
  model: string;
  requests: CounterSeries;
  /** The GenAI operation of the endpoint; undefined for a request that named none (a wrong path). */
  operation: string | undefined;
  duration?: HistogramSeries;
  firstToken?: HistogramSeries;
  inputTokens?: HistogramSeries;
  outputTokens?: HistogramSeries;
  overhead?: HistogramSeries;
  cost?: CounterSeries;
}

/**
 * Kinds of request remembered (each a few series). Past it a request's series are looked up
 * afresh: the label sets are bounded already (MAX_MODELS), this bounds the cross product.
 */
const MAX_KINDS = 4096;

export class GatewayMetrics {
  readonly #requests: SeriesCounter;
  readonly #duration: SeriesHistogram;
  readonly #firstToken: SeriesHistogram;
  readonly #tokens: SeriesHistogram;
  readonly #overhead: SeriesHistogram;
  readonly #refusals: SeriesCounter;
  readonly #upstreamErrors: SeriesCounter;
  readonly #cost: SeriesCounter;
  readonly #models = new Set<string>();
  readonly #kinds = new Map<string, RequestSeries>();
  #last: { endpoint: string; provider?: string; model?: string; status: number; errorType?: string; kind: RequestSeries } | undefined;
  #inFlight = 0;

  constructor(registry: Registry, queues: { requestLog: () => number; pipelineRows: () => number }) {
    const registers = [registry];
    this.#requests = new SeriesCounter({
      name: "warden_gateway_requests_total",
      help: "Gateway requests answered, by endpoint, provider, model and HTTP status.",
      labelNames: ["endpoint", "provider", "model", "status"],
      registers,
    });
    this.#duration = new SeriesHistogram({
      name: "gen_ai_server_request_duration_seconds",
      help: "Time from the request to the last byte of its answer (gen_ai.server.request.duration).",
      labelNames: ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "error_type"],
      buckets: durationBuckets,
      registers,
    });
    this.#firstToken = new SeriesHistogram({
      name: "gen_ai_server_time_to_first_token_seconds",
      help: "Time from the request to the first byte of a successful answer (gen_ai.server.time_to_first_token).",
      labelNames: ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model"],
      buckets: firstTokenBuckets,
      registers,
    });
    this.#tokens = new SeriesHistogram({
      name: "gen_ai_client_token_usage",
      help: "Tokens per request, input and output, as the provider reported them (gen_ai.client.token.usage).",
      labelNames: ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "gen_ai_token_type"],
      buckets: tokenBuckets,
      registers,
    });
    this.#overhead = new SeriesHistogram({
      name: "warden_gateway_overhead_seconds",
      help: "The gateway's own time before it called the provider: checks, guardrails, limits, routing, translation.",
      labelNames: ["endpoint"],
      buckets: overheadBuckets,
      registers,
    });
    this.#refusals = new SeriesCounter({
      name: "warden_gateway_refusals_total",
      help: "Requests the gateway refused itself, by reason: key, access, limit, guardrail, capacity, unavailable, configuration, request.",
      labelNames: ["reason"],
      registers,
    });
    this.#upstreamErrors = new SeriesCounter({
      name: "warden_gateway_upstream_errors_total",
      help: "Provider calls that failed, by provider and type: timeout, body_timeout, connection, status_429, status_5xx, status_4xx, unreadable.",
      labelNames: ["provider", "type"],
      registers,
    });
    this.#cost = new SeriesCounter({
      name: "warden_gateway_cost_usd_total",
      help: "What the gateway's calls cost, in US dollars, at the workspace's prices (calls of models with no known price count nothing).",
      labelNames: ["provider", "model"],
      registers,
    });
    const inFlight = () => this.#inFlight;
    new Gauge({
      name: "warden_gateway_requests_in_flight",
      help: "Gateway requests in flight in this process.",
      registers,
      collect() {
        this.set(inFlight());
      },
    });
    new Gauge({
      name: "warden_gateway_request_log_buffered",
      help: "Request-log rows waiting to be written.",
      registers,
      collect() {
        this.set(queues.requestLog());
      },
    });
    new Gauge({
      name: "warden_gateway_pipeline_rows_buffered",
      help: "Inference-pipeline rows of gateway traffic waiting to be written.",
      registers,
      collect() {
        this.set(queues.pipelineRows());
      },
    });
  }

  started(): void {
    this.#inFlight += 1;
  }

  /** `costPicos`: what the request cost, in pico-dollars; undefined when no price is known or nothing was used. */
  ended(request: RequestMeasure, status: number, latencyMs: number, costPicos: bigint | undefined): void {
    this.#inFlight -= 1;
    const kind = this.#kindOf(request, status);
    const { provider, model } = kind;
    const errorType = request.errorType ?? "";
    kind.requests.inc();
    if (request.refusal !== undefined) this.#refusals.series(request.refusal).inc();
    if (costPicos !== undefined) (kind.cost ??= this.#cost.series(provider, model)).inc(Number(costPicos) / 1e12);
    // Requests that named no endpoint (a wrong path) are counted, but timed under none.
    const operation = kind.operation;
    if (operation === undefined) return;
    (kind.duration ??= this.#duration.series(operation, provider, model, errorType)).observe(latencyMs / 1000);
    if (request.ttfbMs !== undefined && status < 400) (kind.firstToken ??= this.#firstToken.series(operation, provider, model)).observe(request.ttfbMs / 1000);
    if (request.usage) {
      (kind.inputTokens ??= this.#tokens.series(operation, provider, model, "input")).observe(request.usage.inputTokens);
      (kind.outputTokens ??= this.#tokens.series(operation, provider, model, "output")).observe(request.usage.outputTokens);
    }
    if (request.overheadMs !== undefined) (kind.overhead ??= this.#overhead.series(request.endpoint)).observe(request.overheadMs / 1000);
  }

  upstreamFailed(provider: string, type: string): void {
    this.#upstreamErrors.series(provider, type).inc();
  }

  /**
   * The request's kind: the last request's when it is of the same kind (most traffic is one kind
   * after another, and comparing five values costs a tenth of building the key and looking it up).
   */
  #kindOf(request: RequestMeasure, status: number): RequestSeries {
    const last = this.#last;
    if (
      last !== undefined &&
      last.status === status &&
      last.endpoint === request.endpoint &&
      last.provider === request.provider &&
      last.model === request.model &&
      last.errorType === request.errorType
    ) {
      return last.kind;
    }
    const kind = this.#kind(request.endpoint, request.provider ?? "", this.#model(request.model), status, request.errorType ?? "");
    this.#last = { endpoint: request.endpoint, provider: request.provider, model: request.model, status, errorType: request.errorType, kind };
    return kind;
  }

  #kind(endpoint: string, provider: string, model: string, status: number, errorType: string): RequestSeries {
    const key = `${endpoint}\u0000${provider}\u0000${model}\u0000${status}\u0000${errorType}`;
    let kind = this.#kinds.get(key);
    if (kind === undefined) {
      kind = { provider, model, requests: this.#requests.series(endpoint, provider, model, String(status)), operation: genAiOperation(endpoint) };
      if (this.#kinds.size < MAX_KINDS) this.#kinds.set(key, kind);
    }
    return kind;
  }

  #model(model: string | undefined): string {
    if (model === undefined) return "";
    if (this.#models.has(model)) return model;
    if (this.#models.size >= MAX_MODELS) return "other";
    this.#models.add(model);
    return model;
  }
}

/**
 * Why the gateway refused a request itself, by the error it answered; undefined for a provider's
 * error passed on, and for the gateway's own failures (500).
 */
export function refusalReason(error: GatewayError): string | undefined {
  if (error.fromProvider || error.status === 500) return undefined;
  switch (error.status) {
    case 401:
      return "key";
    case 403:
      return "access";
    case 422:
      return "guardrail";
    case 429:
      return "limit";
    case 503:
      // The capacity 503s say to retry in a second, the loading and database ones in five.
      return error.retryAfter === 1 ? "capacity" : error.retryAfter === undefined ? "configuration" : "unavailable";
  }
  return "request";
}

/** The type of a provider's failure, as `warden_gateway_upstream_errors_total` counts it; undefined for anything else. */
export function upstreamErrorType(err: unknown): string | undefined {
  if (err instanceof UpstreamTimeoutError) return "timeout";
  if (err instanceof UpstreamBodyTimeoutError) return "body_timeout";
  if (err instanceof UpstreamConnectionError) return "connection";
  if (!(err instanceof GatewayError) || !err.fromProvider) return undefined;
  if (err.status === 429) return "status_429";
  if (err.status < 500) return "status_4xx";
  if (err.status === 504) return "timeout";
  return err.message.startsWith(UNREADABLE_ANSWER_PREFIX) ? "unreadable" : "status_5xx";
}
