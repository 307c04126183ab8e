import { performance } from "node:perf_hooks";
import { Buffer } from "node:buffer";
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { bearerToken, BodyTooLarge, readBody, respondJson } from "../../platform/http.ts";
import { accessLogger, type Logger } from "../../platform/logger.ts";
import { AccessLineWriter } from "../../platform/access-line.ts";
import { spanFailed, SpanKind, type Span, type Tracing } from "../../platform/tracing.ts";
import type { Attributes } from "@opentelemetry/api";
import { hashKey } from "../../workspaces/keys.ts";
import { checkModelAccess, availableModels } from "../access/model-access.ts";
import type { GatewayKey, GatewaySnapshot, ProviderConfig, ProviderKind, WorkspaceConfig } from "../config/types.ts";
import { genAiOperation, genAiProviderName } from "../endpoints/gen-ai.ts";
import { bundledPriceBook, costOf, dollarsText, type PriceBook } from "../cost/price-book.ts";
import { KeyLookupFailed, type ConfigWatcher } from "../config/watcher.ts";
import type { GuardrailStep } from "../guardrails/guardrail-step.ts";
import { createRequestBodies, type RequestBodies } from "../guardrails/request-bodies.ts";
import type { UsageStep, UsageTicket } from "../limits/usage-step.ts";
import { estimatedTokenCount } from "../endpoints/count-tokens.ts";
import { callerText } from "../guardrails/text.ts";
import { readProviderError, readProviderErrorBody } from "../providers/errors.ts";
import { sseEvents, type SseEvent } from "../providers/sse.ts";
import { formats } from "../formats/translate.ts";
import type { EndpointSpec } from "../endpoints/specs.ts";
import { AccessMembers } from "./access-line.ts";
import { Stop, type StopSignal } from "../../platform/stop.ts";
import { ServerTiming } from "./server-timing.ts";
import { nowSeconds, passedStream, translatedStream, type OutgoingStream } from "./streams.ts";
import type { Upstream, UpstreamResponse } from "../providers/upstream.ts";
import { isUpstreamError } from "../providers/errors.ts";
import type { Attempt } from "../routing/candidates.ts";
import { Cooldown, parseRetryAfter } from "../routing/cooldown.ts";
import { refusalReason, upstreamErrorType, type GatewayMetrics } from "../usage/metrics.ts";
import type { WireFormat } from "../formats/format.ts";
import { resolveRoute } from "../routing/resolve.ts";
import { matchEndpoint, styleForUnknownPath } from "./endpoints.ts";
import {
  asGatewayError,
  bodyNotJsonObject,
  bodyTooLarge,
  bodyWithoutModel,
  databaseUnavailable,
  disabledApiKey,
  errorTypeFor,
  gatewayAtCapacity,
  GatewayError,
  invalidApiKey,
  methodNotAllowed,
  missingApiKey,
  modelBlocked,
  modelNotAllowed,
  noUpstreamCapacity,
  providerErrorToGatewayError,
  renderError,
  streamingImagesUnsupported,
  unreadableAnswer,
  styleForModels,
  unknownPath,
  type EndpointStyle,
} from "./errors.ts";
import { modelList } from "./models.ts";
import { StreamMeter } from "../usage/stream-meter.ts";
import { parseAnswer, usageOfAnswer, type TokenUsage } from "../usage/provider-usage.ts";
import type { Redactions, RequestLog, RequestLogEntry } from "../usage/request-log.ts";
import type { TrafficCapture, TrafficRows } from "../usage/traffic-rows.ts";
import { MAX_ROW_TEXT_CHARS } from "../usage/transcript.ts";
import type { UpstreamRegistry } from "./upstreams.ts";

export interface PipelineDeps {
  watcher: ConfigWatcher;
  upstreams: UpstreamRegistry;
  usage: UsageStep;
  guardrails: GuardrailStep;
  /** Reads request bodies, large ones off the event loop. Default: all on the event loop. */
  bodies?: RequestBodies;
  requestLog: Pick<RequestLog, "record">;
  /** Rows of inference pipelines, for keys bound to one. */
  traffic?: Pick<TrafficRows, "record">;
  logger: Logger;
  maxBodyBytes: number;
  /** The output maximum written for a provider whose format requires one, when the caller set none. */
  defaultMaxTokens: number;
  /** Which providers this process skips for a while; default: a new one. */
  cooldown?: Cooldown;
  /** The Prometheus metrics; none when absent. */
  metrics?: GatewayMetrics;
  /** One info line ("request") per request, at its end (docs/operations.md, "Logs"). */
  accessLog?: boolean;
  /** Answer with a Server-Timing header: the gateway's own time per step. */
  serverTiming?: boolean;
  /** A span per request, with its steps and provider calls as children; none when absent. */
  tracing?: Tracing;
}


/** A call that generates nothing reserves nothing. */
const nothingReserved: UsageTicket = { settle: () => undefined };

/** The provider that answered a call, and how its answer is read. */
interface Sent {
  response: UpstreamResponse;
  upstream: Upstream;
  /** Set when the caller's format and the provider's differ. */
  translation: { from: WireFormat; to: WireFormat } | undefined;
  /** Whether the caller's stream ends with its usage (chat completions asks). */
  streamUsage: boolean;
  /** A streamed answer's events, the first already read; undefined for an answer that is not a stream. */
  events: AsyncIterable<SseEvent> | undefined;
  /** The provider call's span, ended when the provider is done with. */
  span: Span | undefined;
}

/**
 * What one request has learned so far, for its log lines and its request-log row. A class, so that
 * every request's trace has one shape: an object literal with a getter is kept in dictionary mode
 * by V8, which made each of the pipeline's reads of it a hash look-up.
 */
class Trace {
  readonly #logger: Logger;
  #log: Logger | undefined;
  readonly requestId: string;
  /** performance.now() when the request arrived. */
  readonly started: number;
  endpoint = "unknown";
  key?: GatewayKey;
  model?: string;
  provider?: string;
  errorType?: string;
  /** Why the gateway refused the request itself, for the metrics. */
  refusal?: string;
  /** The gateway's own time before its first provider call. */
  overheadMs?: number;
  /** Set when Server-Timing is on. */
  timing?: ServerTiming;
  /** The request's span, when tracing is on; `stepStarted`: when its current step began. */
  span: Span | undefined;
  /** Whether the span records (the sampler kept the request): only then are its steps spans. */
  readonly recorded: boolean;
  stepStarted: number;
  providerKind?: ProviderKind;
  /** The model the provider was asked for (a routing rule may rename it): what is billed. */
  upstreamModel?: string;
  /** The workspace's prices. */
  prices?: PriceBook;
  maxTokens?: number;
  stream?: boolean;
  ttfbMs?: number;
  usage?: TokenUsage;
  tokensEstimated?: boolean;
  guardrailVerdict?: string;
  /** What redacting PII guardrails replaced. */
  redactions?: Redactions;
  /**
   * Set only when the key's traffic goes to an inference pipeline (a key without one pays for
   * nothing here): what the request path has anyway, for the row made later.
   */
  capture?: { pipelineId: string; body?: Record<string, unknown>; output?: TrafficCapture["output"] };

  constructor(logger: Logger, requestId: string, started: number, span: Span | undefined) {
    this.#logger = logger;
    this.requestId = requestId;
    this.started = started;
    this.stepStarted = started;
    this.span = span;
    this.recorded = span?.isRecording() ?? false;
  }

  /** The request's logger: every line carries its request ID. Made when first used. */
  get log(): Logger {
    return (this.#log ??= this.#logger.child({ requestId: this.requestId }));
  }
}

/**
 * The data plane. Checks run in the spec's order, and the first failure answers:
 * key → in-flight cap → (body) → model access → usage limits → input guardrails → routing and the
 * provider call → output guardrails (on streams, as the events pass). Nothing here touches the database but the
 * watcher's timed look-up of a key it does not know.
 */
export function createGatewayHandler(deps: PipelineDeps) {
  let inFlight = 0;
  const bodies = deps.bodies ?? createRequestBodies();
  const cooldown = deps.cooldown ?? new Cooldown();
  const access = deps.accessLog ? new AccessLineWriter(accessLogger(deps.logger)) : undefined;
  const accessMembers = new AccessMembers();
  const tracing = deps.tracing;

  /**
   * Ends the request's current step: for Server-Timing, and, when tracing and `spanned` names a
   * span, as a child span of the request. Only steps that did work are spans: a call through a
   * workspace without guardrails or limits is its own span and its provider call's, no more.
   */
  function step(trace: Trace, name: string, spanned?: string): void {
    trace.timing?.step(name);
    if (!trace.recorded) return;
    const now = performance.now();
    if (spanned !== undefined) tracing!.step(trace.span!, spanned, trace.stepStarted, now);
    trace.stepStarted = now;
  }

  return function handleGatewayRequest(req: IncomingMessage, res: ServerResponse): void {
    const ownRequestId = headerValue(req, "x-request-id");
    let requestId = ownRequestId ?? "";
    let span: Span | undefined;
    if (tracing) {
      // With tracing, a request without an ID takes its trace's (docs/operations.md, "Traces").
      // W3C Trace Context: a tracestate without a traceparent is not read.
      const traceparent = headerValue(req, "traceparent");
      const traceHeaders = { requestId: ownRequestId, traceparent, tracestate: traceparent === undefined ? undefined : headerValue(req, "tracestate") };
      ({ span, requestId } = tracing.startRequest(req.method ?? "", traceHeaders, { "http.request.method": req.method ?? "" }));
    } else if (ownRequestId === undefined) {
      requestId = randomUUID();
    }
    const started = performance.now();
    const trace = new Trace(deps.logger, requestId, started, span);
    if (deps.serverTiming) trace.timing = new ServerTiming(trace.started);
    const time = new Date();
    // The spec: the caller's own ID goes back to it; one the gateway made does not (nor an ID a
    // response header cannot carry).
    if (ownRequestId !== undefined && headerSafe(ownRequestId)) res.setHeader("x-request-id", ownRequestId);
    inFlight += 1;
    deps.metrics?.started();
    const ended = () => {
      inFlight -= 1;
      const latencyMs = Math.round(performance.now() - started);
      // The access log: one line per request, built only when it is on.
      // On one logger made for it up front, not the request's child: making a child for every
      // request costs more than the line itself.
      if (access?.enabled) access.write(accessMembers.line(req, res.statusCode, latencyMs, trace, ownRequestId === undefined));
      if (trace.span) endRequestSpan(tracing!, trace.span, req, res.statusCode, trace);
      const cost = trace.usage ? costOfCall(trace, trace.usage) : undefined;
      const key = trace.key;
      // One literal, not spreads of the outcome and the key's columns: each spread past the first
      // copies property by property through V8's generic path.
      const entry: RequestLogEntry = {
        requestId: trace.requestId,
        time,
        endpoint: trace.endpoint,
        model: trace.model ?? null,
        provider: trace.provider ?? null,
        status: res.statusCode,
        errorType: trace.errorType ?? null,
        latencyMs,
        ttfbMs: trace.ttfbMs ?? null,
        guardrailVerdict: trace.guardrailVerdict ?? null,
        workspaceId: key?.workspaceId ?? null,
        keyId: key?.id ?? null,
        userId: key?.userId ?? null,
        groupIds: key?.groupIds ?? [],
        inputTokens: trace.usage?.inputTokens ?? 0,
        outputTokens: trace.usage?.outputTokens ?? 0,
        cachedInputTokens: trace.usage?.cachedInputTokens ?? 0,
        costUsd: cost === undefined ? null : dollarsText(cost),
        tokensEstimated: trace.tokensEstimated ?? false,
        redactions: trace.redactions ?? null,
      };
      // Before the request log, which fits the entry's values to its columns in place.
      if (trace.capture && key && deps.traffic) {
        deps.traffic.record({
          ...entry,
          pipelineId: trace.capture.pipelineId,
          sessionId: headerValue(req, "x-session-id") ?? null,
          keyId: key.id,
          userId: key.userId,
          usage: trace.usage,
          body: trace.capture.body,
          output: trace.capture.output,
        });
      }
      deps.requestLog.record(entry);
      deps.metrics?.ended(trace, res.statusCode, performance.now() - started, cost);
    };
    // One promise for the request's end, not a catch's and a finally's.
    handle(req, res, trace, inFlight, started).then(ended, (err: unknown) => {
      try {
        fail(res, trace, "responses", err);
      } finally {
        ended();
      }
    });
  };

  async function handle(req: IncomingMessage, res: ServerResponse, trace: Trace, inFlightNow: number, started: number): Promise<void> {
    const url = req.url ?? "/";
    const query = url.indexOf("?");
    const pathname = query === -1 ? url : url.slice(0, query);
    const match = matchEndpoint(pathname);
    if (!match) return fail(res, trace, styleForUnknownPath(pathname), unknownPath(pathname));
    const endpoint = match.endpoint;
    trace.endpoint = endpoint.kind === "models" ? "models" : endpoint.spec.name;
    const style = endpoint.kind === "models" ? styleForModels(endpoint.prefix, { get: (name) => headerValue(req, name) ?? null }) : endpoint.spec.style;
    // HEAD is answered as GET, without a body (Node leaves it out).
    const method = req.method === "HEAD" ? "GET" : req.method;
    if (method !== match.method) return fail(res, trace, style, methodNotAllowed(req.method ?? "", pathname, [match.method]));

    const snapshot = deps.watcher.snapshot;
    try {
      // The spec's order starts with the key; the cap follows at once, before any work.
      // At once when the snapshot holds the key (authenticate).
      const found = authenticate(req, snapshot);
      const key = found instanceof Promise ? await found : found;
      // A key that asks for Server-Timing gets it from here on; its clock started with the request.
      if (key.serverTiming && !trace.timing) trace.timing = new ServerTiming(trace.started);
      step(trace, "auth");
      trace.key = key;
      if (key.inferencePipelineId && endpoint.kind === "call" && endpoint.spec.generates) trace.capture = { pipelineId: key.inferencePipelineId };
      if (inFlightNow > snapshot.settings.maxInFlight) throw gatewayAtCapacity();
      const config = snapshot.workspaces.get(key.workspaceId);
      if (endpoint.kind === "models") {
        const family = style === "messages" ? "messages" : "responses";
        return respondJson(res, 200, modelList(family, availableModels(config, key)));
      }
      await call(req, res, trace, endpoint.spec, key, snapshot, started);
    } catch (err) {
      fail(res, trace, style, err);
    }
  }

  async function call(
    req: IncomingMessage,
    res: ServerResponse,
    trace: Trace,
    spec: EndpointSpec,
    key: GatewayKey,
    snapshot: GatewaySnapshot,
    started: number,
  ): Promise<void> {
    // From here on the caller may leave at any await: then the provider call, if made, is stopped,
    // and no provider slot is taken for nobody (callers who left while the gateway waited held
    // slots for the whole provider call, or for ever when it waited to write to them).
    const abort = new Stop();
    if (res.destroyed) abort.abort();
    // `on`, not `once`: a response closes once, and `once` would wrap the listener and take it off.
    else res.on("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    let received: Buffer;
    try {
      received = await readBody(req, deps.maxBodyBytes);
    } catch (err) {
      throw err instanceof BodyTooLarge ? bodyTooLarge(deps.maxBodyBytes) : err;
    }
    // A large body is parsed in a worker, and comes back as `raw` (a promise); a small one at once.
    const parsing = bodies.parse(received, spec.name, trace.capture !== undefined);
    const parsed = parsing instanceof Promise ? await parsing : parsing;
    step(trace, "body");
    if (trace.capture) trace.capture.body = parsed.body;
    if (spec.name === "images" && parsed.body?.stream !== undefined && parsed.body.stream !== false) throw streamingImagesUnsupported();
    if (!parsed.body) throw bodyNotJsonObject();
    // A redacting guardrail may replace both.
    let body: Record<string, unknown> = parsed.body;
    let raw = parsed.raw;
    const model = body.model;
    if (typeof model !== "string" || model === "") throw bodyWithoutModel();
    trace.model = model;
    trace.maxTokens = spec.outputMaximum(body);
    trace.stream = body.stream === true;

    const config = snapshot.workspaces.get(key.workspaceId);
    trace.prices = config?.prices ?? bundledPriceBook;
    const access = checkModelAccess(config, key, model);
    if (!access.allowed) throw access.reason === "blocked" ? modelBlocked(model) : modelNotAllowed(model, access.available);
    step(trace, "access");

    abort.throwIfAborted();
    const admitted = spec.generates ? deps.usage.admit({ key, config, spec, body }) : nothingReserved;
    const ticket = admitted instanceof Promise ? await admitted : admitted;
    step(trace, "limits", trace.recorded && config?.usageLimits.length ? "reserve usage" : undefined);
    // Settled once: with usage when something was generated; else (a refusal or an upstream error
    // before any output) the reservation is released. Always before the caller has the last byte
    // of its answer, error answers included (the finally below runs before fail() writes one): a
    // caller that sends its next request once it has this answer must never find this request's
    // reservation still held next to its settled usage, or a limit with room refuses it.
    let settled = false;
    let settling: Promise<void> | undefined;
    // A promise only while the step applies it (usage-step.ts): awaited only then.
    const settle = (usage: TokenUsage | undefined): Promise<void> | undefined => {
      if (!settled) {
        settled = true;
        settling = ticket.settle(usage, usage && costOfCall(trace, usage));
      }
      return settling;
    };
    try {
      const guardrailRequest = { key, config, spec };
      const inputGuardrails = spec.guardrails && hasGuardrails(config, "input");
      if (inputGuardrails) {
        const redacting = deps.guardrails.redactInput({ ...guardrailRequest, body, raw });
        const redaction = redacting && (await redacting);
        if (redaction) raw = redaction.raw;
        if (redaction?.counts) {
          // Read again, as any body is: the steps after this one see the redacted text alone.
          const reparsed = await bodies.parse(raw, spec.name, trace.capture !== undefined);
          if (!reparsed.body) throw bodyNotJsonObject();
          body = reparsed.body;
          raw = reparsed.raw;
          trace.redactions = { input: redaction.counts };
          if (trace.capture) trace.capture.body = body;
        }
        const verdict = deps.guardrails.checkInput({ ...guardrailRequest, body, redaction: redaction?.verdict });
        trace.guardrailVerdict = verdict instanceof Promise ? await verdict : verdict;
      }
      step(trace, "guardrails", trace.recorded && inputGuardrails ? "input guardrails" : undefined);

      const route = resolveRoute(config, model, spec, { random: Math.random, cooldown });
      if (!route.ok) throw route.error;
      if (spec.target(route.attempts[0]!.provider.kind)?.estimated) {
        trace.provider = route.attempts[0]!.provider.name;
        trace.providerKind = route.attempts[0]!.provider.kind;
        return respondJson(res, 200, estimatedTokenCount(callerText(spec, body), body.tools));
      }
      const { response, upstream, translation, streamUsage, events, span } = await sendToFirstThatAnswers(req, trace, spec, body, raw, route.attempts, abort);
      let holding = true;
      // The provider is done with: its slot is freed, and its call's span ends.
      const release = () => {
        if (holding) {
          upstream.release();
          if (span) tracing!.end(span);
        }
        holding = false;
      };
      try {
        const firstByte = () => {
          trace.ttfbMs ??= Math.round(performance.now() - started);
        };
        if (events) {
          const meter = new StreamMeter(raw.length, trace.capture ? MAX_ROW_TEXT_CHARS : 0);
          const finish = () => settle(meter.usage);
          const guard = spec.guardrails ? deps.guardrails.streamGuard(guardrailRequest) : undefined;
          const stream = translation
            ? translatedStream(events, translation.to.streamReader(nowSeconds()), translation.from.streamWriter({ streamUsage }), meter, guard)
            : passedStream(events, spec.format ?? "responses", meter, guard);
          try {
            const whole = await writeStream(res, trace, stream, meter, firstByte, finish);
            if (guard && whole) trace.guardrailVerdict = [trace.guardrailVerdict, guard.verdict()].filter(Boolean).join(",");
          } finally {
            if (guard && Object.keys(guard.counts).length > 0) trace.redactions = { ...trace.redactions, output: guard.counts };
            // Whatever happened, what the provider reported counts (an estimate when it reported nothing).
            trace.usage = meter.usage;
            trace.tokensEstimated = meter.estimated;
            if (trace.capture) trace.capture.output = meter.text;
            await finish();
            if (meter.estimated) trace.log.warn({ usage: meter.usage }, "stream ended before the provider reported usage: counting an estimate");
          }
          return;
        }
        let output = await response.bytes();
        // The provider is done: its slot is not held through the output checks.
        release();
        // Generated, so counted, even if the output guardrail blocks it next. Settling runs while
        // the output is checked, and is done before the answer is written.
        // A row's output text comes from the same parse as the usage.
        const outputGuardrails = spec.guardrails && hasGuardrails(config, "output");
        let answer: unknown;
        if (translation) {
          const parsed = parseAnswer(output);
          if (parsed === undefined) throw unreadableAnswer("it is not JSON.");
          const canonical = translation.to.readAnswer(parsed, nowSeconds());
          answer = translation.from.writeAnswer(canonical);
          output = Buffer.from(JSON.stringify(answer));
          trace.usage = canonical.usage;
        } else {
          // Parsed once: for the usage, the output guardrails and the row alike.
          answer = parseAnswer(output);
          trace.usage = usageOfAnswer(answer);
        }
        const applying = settle(trace.usage);
        if (outputGuardrails) {
          const checking = deps.guardrails.checkOutput({ ...guardrailRequest, body: output, answer });
          const checked = checking instanceof Promise ? await checking : checking;
          if (checked.verdict) trace.guardrailVerdict = [trace.guardrailVerdict, checked.verdict].filter(Boolean).join(",");
          if (checked.redacted) {
            ({ body: output, answer } = checked.redacted);
            trace.redactions = { ...trace.redactions, output: checked.redacted.counts };
          }
        }
        if (applying) await applying;
        step(trace, "output", trace.recorded && outputGuardrails ? "output guardrails" : undefined);
        // What the caller is given (not an answer the output guardrails blocked), as text for the row.
        if (trace.capture && spec.format !== null) trace.capture.output = { answer };
        firstByte();
        const type = translation ? "application/json" : contentType(response) || "application/json";
        res.writeHead(response.status, withTiming(trace, { "content-type": type, "content-length": output.length }));
        res.end(output);
      } finally {
        release();
      }
    } finally {
      const releasing = settle(undefined);
      if (releasing) await releasing;
    }
  }

  /**
   * Sends the call to the route's attempts in order, until one answers. It moves on after a
   * connection failure, a timeout, a 5xx or a 429 (nothing has reached the caller yet), and past a
   * provider at its in-flight cap; each attempt it moves on from is a row of the request log of
   * its own. Any other provider error (400, 401…: the next provider would refuse it too) ends the
   * call, and when every attempt failed, the last failure answers. The provider that answered
   * holds a slot until the caller releases it.
   */
  async function sendToFirstThatAnswers(
    req: IncomingMessage,
    trace: Trace,
    spec: EndpointSpec,
    body: Record<string, unknown>,
    raw: Buffer,
    attempts: readonly Attempt[],
    signal: StopSignal,
  ): Promise<Sent> {
    let failure: unknown;
    let span: Span | undefined;
    let attemptStarted = performance.now();
    for (let i = 0; i < attempts.length; i++) {
      const attempt = attempts[i]!;
      if (i > 0) recordSuperseded(trace, failure, Math.round(performance.now() - attemptStarted));
      attemptStarted = performance.now();
      const provider = attempt.provider;
      trace.provider = provider.name;
      trace.providerKind = provider.kind;
      trace.upstreamModel = attempt.upstreamModel;
      signal.throwIfAborted();
      const upstream = deps.upstreams.for(provider);
      if (!upstream.tryAcquire()) {
        failure = noUpstreamCapacity(provider.name);
        continue;
      }
      try {
        // Routing keeps only providers whose kind has a target for the endpoint.
        const target = spec.target(provider.kind)!;
        const translation =
          spec.format !== null && target.format !== null && target.format !== spec.format
            ? { from: formats[spec.format], to: formats[target.format] }
            : undefined;
        let upstreamBody: Buffer;
        let streamUsage = true;
        if (translation) {
          const translated = await bodies.translate(raw, body, translation.from.name, translation.to.name, attempt.upstreamModel, deps.defaultMaxTokens);
          upstreamBody = translated.body;
          streamUsage = translated.streamUsage;
        } else {
          upstreamBody = attempt.upstreamModel === body.model ? raw : await bodies.withModel(raw, body, attempt.upstreamModel);
        }
        trace.overheadMs ??= performance.now() - trace.started;
        step(trace, "route", translation ? "translate" : undefined);
        // A request not sampled has no children: the call carries the request's own context.
        span = trace.recorded ? providerSpan(trace.span!, trace, attempt) : trace.span;
        const response = await upstream.send({
          path: target.path,
          body: upstreamBody,
          clientHeaders: { get: (name) => headerValue(req, name) ?? null },
          traceHeaders: span ? tracing!.headersFor(span) : undefined,
          signal,
        });
        span?.setAttribute("http.response.status_code", response.status);
        if (response.status < 400) {
          // A stream that breaks before its first event has sent the caller nothing either: the
          // first event is awaited here, so that such a break moves on too.
          const events = body.stream === true && contentType(response).includes("text/event-stream") ? await firstEventRead(response.body) : undefined;
          cooldown.succeeded(provider.id);
          step(trace, "provider");
          return { response, upstream, translation, streamUsage, events, span };
        }
        const { message } = readProviderError(response.status, await readProviderErrorBody(response.body));
        const error = providerErrorToGatewayError(response.status, message);
        if (span) tracing!.fail(span, String(response.status), message);
        if (response.status !== 429 && response.status < 500) throw error;
        cooldown.failed(provider.id, { status: response.status, retryAfterSeconds: parseRetryAfter(headerOf(response, "retry-after")) });
        failure = error;
      } catch (err) {
        upstream.release();
        if (span?.isRecording()) tracing!.fail(span, upstreamErrorType(err) ?? (err instanceof Error ? err.name : "error"), err instanceof Error ? err.message : undefined);
        if (signal.aborted || !isUpstreamError(err)) throw err;
        cooldown.failed(provider.id);
        failure = err;
        continue;
      }
      upstream.release();
    }
    throw failure;
  }

  /** The CLIENT span of one provider call, a child of the request's: what the GenAI conventions ask of one. */
  function providerSpan(parent: Span, trace: Trace, attempt: Attempt): Span {
    const operation = genAiOperation(trace.endpoint) ?? trace.endpoint;
    return tracing!.startChild(parent, `${operation} ${attempt.upstreamModel}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": genAiProviderName(attempt.provider.kind),
        "gen_ai.request.model": attempt.upstreamModel,
        "warden.provider": attempt.provider.name,
        "server.address": hostOf(attempt.provider),
      },
    });
  }

  /** A failed attempt the call moved on from, as a request-log row of its own. */
  function recordSuperseded(trace: Trace, failure: unknown, latencyMs: number): void {
    const error = asGatewayError(failure);
    countUpstreamFailure(trace, failure);
    deps.requestLog.record({
      requestId: trace.requestId,
      time: new Date(),
      endpoint: trace.endpoint,
      model: trace.model ?? null,
      provider: trace.provider ?? null,
      status: error.status,
      errorType: errorTypeFor(error.status),
      latencyMs,
      ttfbMs: null,
      guardrailVerdict: trace.guardrailVerdict ?? null,
      ...keyColumns(trace),
      inputTokens: 0,
      outputTokens: 0,
      tokensEstimated: false,
      superseded: true,
    });
  }

  /**
   * Events go to the caller as they are made, each whole. A failure before the first event is an
   * ordinary error answer; after it, the status is sent, so the stream ends with the format's own
   * error event instead, and never hangs. `finish` (settling the usage) runs before the caller
   * can see the stream end: before the provider's final event, the end, or the error event.
   * Resolves true when the stream went out whole, false when it ended with the error event.
   */
  async function writeStream(
    res: ServerResponse,
    trace: Trace,
    stream: OutgoingStream,
    meter: StreamMeter,
    firstByte: () => void,
    finish: () => Promise<void> | undefined,
  ): Promise<boolean> {
    let started = false;
    const start = () => {
      res.writeHead(200, withTiming(trace, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" }));
      started = true;
      firstByte();
    };
    try {
      for await (const piece of stream.pieces) {
        if (!started) start();
        if (meter.complete) await finish();
        if (!res.write(piece) && !(await drained(res))) throw callerGone();
      }
      if (!started) start();
      await finish();
      res.end();
      return true;
    } catch (err) {
      if (!started || res.destroyed) throw err;
      countUpstreamFailure(trace, err);
      const error = asGatewayError(err);
      // An output guardrail blocked the stream after its first event: the caller has a 200.
      if (error.detailObject) {
        trace.guardrailVerdict = blockedVerdict(error.detailObject);
        trace.refusal = refusalReason(error);
      }
      await finish();
      res.end(stream.errorEvent(error.message));
      return false;
    }
  }

  /**
   * The caller's key: from the snapshot at once, or (a promise) from the database when the
   * snapshot does not hold it yet. An await of what is already there would cost every request a
   * turn of the microtask queue (usage-step.ts).
   */
  function authenticate(req: IncomingMessage, snapshot: GatewaySnapshot): GatewayKey | Promise<GatewayKey> {
    const secret = bearerToken(headerValue(req, "authorization")) ?? headerValue(req, "x-api-key");
    if (!secret) throw missingApiKey();
    const hash = hashKey(secret);
    const key = snapshot.keysByHash.get(hash);
    if (key) return usable(key);
    return deps.watcher.lookUpKey(hash).then(
      (looked) => usable(looked ?? undefined),
      (err: unknown) => {
        throw err instanceof KeyLookupFailed ? databaseUnavailable("the API key") : err;
      },
    );
  }

  function usable(key: GatewayKey | undefined): GatewayKey {
    if (!key) throw invalidApiKey();
    if (key.disabled) throw disabledApiKey();
    return key;
  }

  /**
   * A provider's failure, counted and logged once, with its type (a refusal of the gateway's own
   * is neither): the request log says a call failed, this line says how the provider failed it.
   */
  function countUpstreamFailure(trace: Trace, err: unknown): void {
    const type = upstreamErrorType(err);
    if (type === undefined) return;
    const provider = trace.provider ?? "";
    deps.metrics?.upstreamFailed(provider, type);
    const error = asGatewayError(err);
    trace.log.warn({ provider, model: trace.model, type, status: error.status, message: error.message }, "provider call failed");
  }

  function fail(res: ServerResponse, trace: Trace, style: EndpointStyle, err: unknown): void {
    const error = asGatewayError(err);
    trace.errorType = errorTypeFor(error.status);
    countUpstreamFailure(trace, err);
    trace.refusal = refusalReason(error);
    if (error.detailObject) trace.guardrailVerdict = blockedVerdict(error.detailObject);
    // The caller went away (which also aborts the provider call): there is no one to answer.
    if (res.destroyed) return;
    if (!(err instanceof GatewayError) && error.status === 500) trace.log.error({ err }, "gateway request failed");
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const rendered = renderError(style, error);
    res.writeHead(rendered.status, withTiming(trace, { ...rendered.headers, "content-length": Buffer.byteLength(rendered.body) }));
    res.end(rendered.body);
  }
}

/** What a call cost (pico-dollars) at its workspace's price for the model its provider was asked for; undefined when no price is known. */
function costOfCall(trace: Trace, usage: TokenUsage): bigint | undefined {
  const model = trace.upstreamModel ?? trace.model;
  const price = model === undefined ? undefined : (trace.prices ?? bundledPriceBook).priceOf(trace.provider, model);
  return price && costOf(price, usage);
}

/** A guardrail's block, as the request log has it. */
function blockedVerdict(detail: { type: string; stage: string }): string {
  return `${detail.type}:blocked:${detail.stage}`;
}

function hasGuardrails(config: WorkspaceConfig | undefined, stage: "input" | "output"): boolean {
  return (config?.guardrails[stage].length ?? 0) > 0;
}

/** The request's span, named and described once the request is done. */
function endRequestSpan(tracing: Tracing, span: Span, req: IncomingMessage, status: number, trace: Trace): void {
  // A request not sampled records nothing: its attributes would be built for nobody.
  if (!span.isRecording()) return;
  const url = req.url ?? "/";
  const query = url.indexOf("?");
  const operation = genAiOperation(trace.endpoint);
  const attributes: Attributes = {
    "http.response.status_code": status,
    "url.path": query === -1 ? url : url.slice(0, query),
    "warden.endpoint": trace.endpoint,
  };
  if (operation !== undefined) attributes["gen_ai.operation.name"] = operation;
  if (trace.model !== undefined) attributes["gen_ai.request.model"] = trace.model;
  if (trace.providerKind !== undefined) attributes["gen_ai.provider.name"] = genAiProviderName(trace.providerKind);
  if (trace.provider !== undefined) attributes["warden.provider"] = trace.provider;
  if (trace.maxTokens !== undefined) attributes["gen_ai.request.max_tokens"] = trace.maxTokens;
  if (trace.usage) {
    attributes["gen_ai.usage.input_tokens"] = trace.usage.inputTokens;
    attributes["gen_ai.usage.output_tokens"] = trace.usage.outputTokens;
  }
  if (trace.stream !== undefined) attributes["warden.stream"] = trace.stream;
  if (trace.key) {
    attributes["warden.key_id"] = trace.key.id;
    attributes["warden.workspace_id"] = trace.key.workspaceId;
  }
  if (trace.guardrailVerdict) attributes["warden.guardrail_verdict"] = trace.guardrailVerdict;
  if (trace.refusal !== undefined) attributes["warden.refusal"] = trace.refusal;
  span.setAttributes(attributes);
  // The GenAI conventions' name for a model call; for anything else, HTTP's (the method alone,
  // as there is no low-cardinality route to add).
  span.updateName(operation !== undefined && trace.model !== undefined ? `${operation} ${trace.model}` : (req.method ?? "HTTP"));
  // As HTTP server spans are: an error status for the gateway's own failures (5xx); a refusal
  // (4xx) is the caller's, and says so in error.type.
  if (status >= 500) spanFailed(span, trace.errorType ?? String(status));
  else if (status >= 400) span.setAttribute("error.type", trace.errorType ?? String(status));
  tracing.end(span);
}

/**
 * A provider's host, parsed once per configured provider: parsing its URL on every call was 3%
 * of the CPU that tracing added in a profile. Snapshots replace their providers on a reload,
 * and the old ones' entries go with them.
 */
const hosts = new WeakMap<ProviderConfig, string>();
function hostOf(provider: ProviderConfig): string {
  let host = hosts.get(provider);
  if (host === undefined) hosts.set(provider, (host = URL.parse(provider.baseUrl)?.hostname ?? ""));
  return host;
}

/** Whether a header value may be sent back as is: what Node's setHeader takes, and not too long. */
function headerSafe(value: string): boolean {
  return value.length <= 256 && !/[^\t\x20-\x7e\x80-\xff]/.test(value);
}

/**
 * A provider stream's events, its first one read now (a failure before it throws here), the rest as
 * they come. An iterator by hand, not an async generator around the events' own: a generator that
 * delegates costs each event two more promises and microtask turns.
 */
async function firstEventRead(body: AsyncIterable<Buffer>): Promise<AsyncIterable<SseEvent>> {
  const iterator = sseEvents(body);
  let first: IteratorResult<SseEvent, void> | undefined = await iterator.next();
  const events: AsyncIterableIterator<SseEvent> = {
    next() {
      if (first === undefined) return iterator.next();
      const result = first;
      first = undefined;
      return Promise.resolve(result);
    },
    return() {
      first = undefined;
      return iterator.return(undefined);
    },
    [Symbol.asyncIterator]: () => events,
  };
  return events;
}

/**
 * Resolves true once `res` takes writes again, false once the caller is gone: at once when it is
 * gone already, for then neither event comes again (a write to a closed response returns false,
 * and waiting for its 'close' kept the request, its provider slot and its reservation for ever).
 */
function drained(res: ServerResponse): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve(!res.destroyed);
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/** The caller went away mid-stream: nothing is answered (fail() finds the response destroyed). */
function callerGone(): Error {
  return new Error("the caller went away");
}

/** Whose request it was, as a request-log row has it (all null before the key is known). */
function keyColumns(trace: Trace): Pick<RequestLogEntry, "workspaceId" | "keyId" | "userId" | "groupIds"> {
  return { workspaceId: trace.key?.workspaceId ?? null, keyId: trace.key?.id ?? null, userId: trace.key?.userId ?? null, groupIds: trace.key?.groupIds ?? [] };
}

/** The headers, with Server-Timing when it is on for this request. */
function withTiming(trace: Trace, headers: Record<string, string | number>): Record<string, string | number> {
  return trace.timing ? { ...headers, "server-timing": trace.timing.header() } : headers;
}

function contentType(response: UpstreamResponse): string {
  return headerOf(response, "content-type") ?? "";
}

function headerOf(response: UpstreamResponse, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return (Array.isArray(value) ? value[0] : value) || undefined;
}
