import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "../../platform/logger.ts";
import { answerText } from "../endpoints/caller-text.ts";
import { BatchWriter, isDataError, type WriteFailure } from "./batch-writer.ts";
import type { TokenUsage } from "./provider-usage.ts";
import type { CallOutcome } from "./request-log.ts";
import { capText, MAX_ROW_TEXT_CHARS, transcriptOf, type Transcript, type TranscriptEndpoint } from "./transcript.ts";

/**
 * Where the gateway's traffic rows go: one batch of rows of one inference pipeline, stored all or
 * nothing exactly as `POST /inference-pipelines/{id}/data-stream` stores it. Throws a ConnectError
 * invalid_argument (rows refused) or not_found (the pipeline is gone), or a database error. The
 * composition root passes the row store's; the gateway never imports it.
 */
export type PipelineSink = (pipelineId: string, config: JsonObject, rows: TrafficRow[]) => Promise<void>;

/**
 * One row, as the sink takes it: its inference ID and timestamp (UNIX seconds), and the row itself
 * as JSON text, made once when the request is done. The row store splices the text into its batch
 * as it is (no second walk or serialization), and the buffer's bound counts its real size.
 */
export interface TrafficRow {
  inferenceId: string;
  timestamp: number;
  json: string;
}

/** How the columns of a traffic row map, as a data-stream caller would say it. */
export const trafficRowConfig: JsonObject = {
  outputColumnName: "output",
  inputVariableNames: ["input"],
  latencyColumnName: "latency",
  timestampColumnName: "timestamp",
  inferenceIdColumnName: "inferenceId",
  numOfTokenColumnName: "tokens",
  userIdColumnName: "userId",
  sessionIdColumnName: "sessionId",
};

/** The longest ID (inference or session) the row store takes. */
const MAX_ID_CHARS = 1024;

/**
 * What the request path hands over for one request of a key bound to a pipeline: references to
 * what it has anyway, and nothing it would not have built otherwise. The row is made from it
 * later, off the request path (see TrafficRows).
 */
export interface TrafficCapture extends CallOutcome {
  pipelineId: string;
  sessionId: string | null;
  keyId: string;
  userId: string | null;
  usage: TokenUsage | undefined;
  /** The parsed request body (or a worker's stand-in for a large one), when it was read. */
  body: Record<string, unknown> | undefined;
  /**
   * What the caller was given: a non-streamed answer (parsed, as the usage is read from it), or a
   * stream's text as it passed; undefined when it was given none.
   */
  output: { answer: unknown } | { kept: string; total: number } | undefined;
}

interface PendingRow {
  pipelineId: string;
  row: TrafficRow;
  /** About what it holds in memory, for the buffer's bound. */
  bytes: number;
}

export interface TrafficRowsOptions {
  /** None: rows of bound keys are dropped and counted (a process without the row store). */
  sink: PipelineSink | undefined;
  logger: Logger;
  flushIntervalMs?: number;
  /** Rows per sink call: data-stream's own maximum. */
  batchSize?: number;
  maxBuffered?: number;
  maxBufferedBytes?: number;
  /** A large body's transcript, when a worker read it (request-bodies.ts). */
  transcriptOfStandIn?: (body: Record<string, unknown>) => Transcript | undefined;
}

/**
 * The gateway's traffic as rows of inference pipelines. The request path calls `record` once a
 * request has been answered; `record` only queues what it is given, and never throws. Rows are
 * built in batches soon after (the transcript of the request, the output text of the answer), and
 * written by a BatchWriter: per pipeline, at most 1,000 rows a call, never awaited by a request.
 * Rows the sink refuses are dropped with a log line (a pipeline that is gone: one per batch), a
 * store that is away is retried, and past the buffer's bounds the oldest are dropped; every drop
 * is counted in `dropped`.
 */
export class TrafficRows {
  readonly #options: TrafficRowsOptions;
  readonly #writer: BatchWriter<PendingRow>;
  /** Captures not yet made into rows: they hold request bodies, so they wait one turn at most. */
  #intake: TrafficCapture[] = [];
  #building: NodeJS.Immediate | undefined;
  /** Captures that could not be made into rows (a bug; never a caller's input). */
  #unbuilt = 0;
  #warnedNoSink = false;

  constructor(options: TrafficRowsOptions) {
    this.#options = options;
    const sink = options.sink;
    this.#writer = new BatchWriter<PendingRow>({
      write: async (batch) => {
        if (!sink) throw new NoSink();
        await sink(batch[0]!.pipelineId, trafficRowConfig, batch.map((entry) => entry.row));
      },
      classify,
      logger: options.logger,
      messages: {
        retry: "pipeline rows write failed; will retry",
        refused: "pipeline row refused by the row store; dropped",
        discarded: "pipeline rows dropped: the inference pipeline is gone, or no row store is configured",
        overflow: "pipeline rows dropped while the row store was unavailable",
        lost: "pipeline rows lost at shutdown: the row store did not take them",
      },
      describe: (batch) => ({
        pipelineId: batch[0]?.pipelineId,
        inferenceIds: batch.slice(0, 10).map((entry) => entry.row.inferenceId),
      }),
      // Rows wait up to a second, or until a whole batch is there: the row store's cost per call
      // (a transaction, the pipeline's lookup and lock, its counters) is then shared by many rows.
      flushIntervalMs: options.flushIntervalMs ?? 1000,
      batchSize: options.batchSize ?? 1000,
      flushWhenFull: true,
      maxBuffered: options.maxBuffered ?? 10_000,
      maxBufferedBytes: options.maxBufferedBytes ?? 64 * 1024 * 1024,
      sizeOf: (entry) => entry.bytes,
      batchKey: (entry) => entry.pipelineId,
    });
  }

  /** Queues one request's row; the work of building it is done after the current turn, in a batch. */
  record(capture: TrafficCapture): void {
    if (!this.#options.sink && !this.#warnedNoSink) {
      this.#warnedNoSink = true;
      this.#options.logger.warn("a gateway key is bound to an inference pipeline, but this process has no row store: its rows are dropped");
    }
    this.#intake.push(capture);
    this.#building ??= setImmediate(() => this.#build());
  }

  /** Rows in memory, not yet written (captures not yet built included). */
  get buffered(): number {
    return this.#writer.buffered + this.#intake.length;
  }

  /** Rows dropped since start, for whatever reason. */
  get dropped(): number {
    return this.#writer.dropped + this.#unbuilt;
  }

  /** Rows written since start. */
  get written(): number {
    return this.#writer.written;
  }

  /** Builds and writes what is queued now; concurrent calls share one write. */
  flush(): Promise<void> {
    this.#build();
    return this.#writer.flush();
  }

  async close(): Promise<void> {
    this.#build();
    await this.#writer.close();
  }

  #build(): void {
    if (this.#building) clearImmediate(this.#building);
    this.#building = undefined;
    const captures = this.#intake;
    this.#intake = [];
    for (const capture of captures) {
      try {
        this.#writer.add(this.#row(capture));
      } catch (err) {
        this.#unbuilt += 1;
        this.#options.logger.error({ err, pipelineId: capture.pipelineId, requestId: capture.requestId }, "pipeline row could not be built; dropped");
      }
    }
  }

  #row(c: TrafficCapture): PendingRow {
    const endpoint = transcriptEndpoint(c.endpoint);
    const transcript =
      c.body && endpoint ? (this.#options.transcriptOfStandIn?.(c.body) ?? transcriptOf(c.body, endpoint)) : emptyTranscript;
    const output = outputOf(c.output);
    const inputTokens = c.usage?.inputTokens ?? 0;
    const outputTokens = c.usage?.outputTokens ?? 0;
    const row: JsonObject = {
      inferenceId: clean(c.requestId.slice(0, MAX_ID_CHARS)),
      timestamp: c.time.getTime() / 1000,
      input: clean(transcript.input),
      messages: transcript.messages ? transcript.messages.map((m) => ({ role: clean(m.role), content: clean(m.content) })) : null,
      system: clean(transcript.system),
      instructions: clean(transcript.instructions),
      output: clean(output),
      model: clean(c.model),
      provider: c.provider,
      endpoint: c.endpoint,
      status: c.status,
      errorType: c.errorType,
      latency: c.latencyMs,
      timeToFirstToken: c.ttfbMs,
      inputTokens,
      outputTokens,
      tokens: inputTokens + outputTokens,
      guardrails: c.guardrailVerdict ? c.guardrailVerdict.split(",") : null,
      userId: c.userId,
      sessionId: clean(c.sessionId === null ? null : c.sessionId.slice(0, MAX_ID_CHARS)),
      keyId: c.keyId,
    };
    const json = JSON.stringify(row);
    return {
      pipelineId: c.pipelineId,
      row: { inferenceId: row.inferenceId as string, timestamp: row.timestamp as number, json },
      bytes: 128 + 2 * json.length,
    };
  }
}

/** The row store could not be reached from this process at all. */
class NoSink extends Error {}

/**
 * Refused rows (invalid_argument, or data the database cannot take) are found and dropped alone; a
 * pipeline that is gone, or no row store, drops the batch; anything else (the database away, a
 * timeout) is retried.
 */
function classify(err: unknown): WriteFailure {
  if (err instanceof NoSink) return "discard";
  if (err instanceof ConnectError) {
    if (err.code === Code.NotFound) return "discard";
    if (err.code === Code.InvalidArgument) return "refused";
  }
  return isDataError(err) ? "refused" : "retry";
}

const emptyTranscript: Transcript = { messages: null, system: null, instructions: null, input: null };

function transcriptEndpoint(endpoint: string): TranscriptEndpoint | undefined {
  return endpoint === "messages" || endpoint === "responses" || endpoint === "chat" || endpoint === "embeddings" || endpoint === "images" ? endpoint : undefined;
}

function outputOf(output: TrafficCapture["output"]): string | null {
  if (output === undefined) return null;
  if ("answer" in output) {
    const parts = answerText(output.answer);
    return parts.length === 0 ? null : capText(parts.join("\n"));
  }
  return output.total === 0 && output.kept === "" ? null : capText(output.kept, MAX_ROW_TEXT_CHARS, output.total);
}

/**
 * Text the row store takes: PostgreSQL's jsonb holds neither U+0000 nor half a surrogate pair,
 * and would refuse the row for either.
 */
function clean(value: string | null): string | null;
function clean(value: string): string;
function clean(value: string | null): string | null {
  if (value === null) return null;
  const text = value.isWellFormed() ? value : value.toWellFormed();
  return text.includes("\u0000") ? text.replaceAll("\u0000", "") : text;
}
