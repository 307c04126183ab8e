import { Buffer } from "node:buffer";
import { gatewayAtCapacity, GatewayError } from "../dataplane/errors.ts";
import type { EndpointName } from "../endpoints/specs.ts";
import type { FormatName } from "../formats/format.ts";
import { translateRequest, type TranslatedRequest } from "../formats/translate.ts";
import { standIn } from "./text.ts";
import { WorkerQueueFull, WorkerTimeout, type WorkerPool } from "./worker-pool.ts";

/**
 * Bodies up to this size are parsed on the event loop. JSON.parse reads deep nesting at about
 * 5 MB/s, the slowest input found, so this holds the loop some 10 ms at most; the worker's round
 * trip (a copy each way) would cost more than that for smaller bodies.
 */
const PARSE_INLINE_BYTES = 64 * 1024;

export interface ParsedBody {
  body: Record<string, unknown> | undefined;
  raw: Buffer;
}

/** Reading request bodies: on the event loop when small, in a worker when large. */
export interface RequestBodies {
  /**
   * The body's JSON object, or undefined when it is not one, and the raw body to send on. A large
   * body is moved to a worker, parsed there and moved back (`raw` is then a new Buffer over the
   * same memory, and the one passed in is empty); its object is a stand-in (text.ts `standIn`):
   * the top-level fields the gateway reads, and the caller text, which text.ts returns for it.
   * With `transcript` (a key whose traffic goes to a pipeline), a large body's stand-in also
   * carries what the pipeline row keeps of it (text.ts `standInTranscript`). A small body's
   * answer comes at once, not as a promise (usage-step.ts says why).
   */
  parse(raw: Buffer, endpoint: EndpointName, transcript?: boolean): ParsedBody | Promise<ParsedBody>;
  /** The body to send upstream under another model name. */
  withModel(raw: Buffer, body: Record<string, unknown>, model: string): Promise<Buffer>;
  /** The body translated to the provider's format under `model` (formats/translate.ts); a large one in a worker. */
  translate(raw: Buffer, body: Record<string, unknown>, from: FormatName, to: FormatName, model: string, defaultMaxTokens: number): Promise<TranslatedRequest>;
}

export interface RequestBodiesOptions {
  workers: WorkerPool;
  /** The guardrails' cap, applied to a stand-in's text when a worker extracts it. */
  maxTextBytes: number;
}

/** Without options, every body is parsed on the event loop. */
export function createRequestBodies(options?: RequestBodiesOptions): RequestBodies {
  const offThread = (raw: Buffer) => (options && raw.length > PARSE_INLINE_BYTES ? options : undefined);
  return {
    parse(raw, endpoint, transcript = false) {
      const off = offThread(raw);
      if (!off) return { body: parseObject(raw), raw };
      return parseInWorker(off, raw, endpoint, transcript);
    },
    async withModel(raw, body, model) {
      const off = offThread(raw);
      if (!off) return Buffer.from(JSON.stringify({ ...body, model }));
      const rewritten = await inWorker(() => off.workers.run({ kind: "rewrite", raw, model }));
      return Buffer.from(rewritten.buffer, rewritten.byteOffset, rewritten.byteLength);
    },
    async translate(raw, body, from, to, model, defaultMaxTokens) {
      const off = offThread(raw);
      if (!off) return translateRequest(body, from, to, model, defaultMaxTokens);
      const result = await inWorker(() => off.workers.run({ kind: "translate", raw, from, to, model, defaultMaxTokens }));
      if (!result.ok) throw new GatewayError(result.status, result.message);
      return { body: Buffer.from(result.raw.buffer, result.raw.byteOffset, result.raw.byteLength), streamUsage: result.streamUsage };
    },
  };
}

/** A large body, parsed in a worker: moved there, not copied, when the Buffer is the whole of its memory (as a large one read whole is). */
async function parseInWorker(off: RequestBodiesOptions, raw: Buffer, endpoint: EndpointName, transcript: boolean): Promise<ParsedBody> {
  const movable = raw.byteOffset === 0 && raw.buffer.byteLength === raw.length && raw.buffer instanceof ArrayBuffer;
  const job = { kind: "parse", raw, endpoint, maxTextBytes: off.maxTextBytes, transcript } as const;
  const { summary, raw: back } = await inWorker(() => off.workers.run(job, movable ? [raw.buffer as ArrayBuffer] : []));
  return { body: summary ? standIn(summary) : undefined, raw: Buffer.from(back.buffer, back.byteOffset, back.byteLength) };
}

/** A body the workers cannot take now, or not in time, is a capacity problem: 503, retry. */
async function inWorker<T>(job: () => Promise<T>): Promise<T> {
  try {
    return await job();
  } catch (err) {
    if (err instanceof WorkerQueueFull || err instanceof WorkerTimeout) throw gatewayAtCapacity();
    throw err;
  }
}

export function parseObject(raw: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(raw.toString("utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
