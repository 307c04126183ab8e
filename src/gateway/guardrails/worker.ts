import { Buffer } from "node:buffer";
import { parentPort, workerData } from "node:worker_threads";
import { detect, type DetectorBlock, type DetectorCheck } from "./detect.ts";
import { createContentDetector, parseContentLexicon } from "./detectors/content-safety.ts";
import { createInjectionDetector, parseInjectionWeights } from "./detectors/injection.ts";
import type { DetectorData } from "./detectors/loader.ts";
import { createPiiDetector } from "./detectors/pii.ts";
import { GatewayError } from "../dataplane/errors.ts";
import { endpointSpecs, type EndpointName } from "../endpoints/specs.ts";
import type { FormatName } from "../formats/format.ts";
import { translateRequest } from "../formats/translate.ts";
import { parseObject } from "./request-bodies.ts";
import { summarize, type BodySummary } from "./text.ts";
import { redactRequest, type EntityCounts } from "./redaction.ts";

/**
 * A worker of the pool (worker-pool.ts): builds the three built-in detectors from the data the
 * gateway loaded, then does one job at a time: a detector's check of a text, or reading a large
 * request body. Messages that arrive while it builds wait. Answers are small.
 */

export type WorkerJob =
  | { kind: "check"; check: DetectorCheck; text: string }
  /** The body's summary, or null when it is not a JSON object; and the body, handed back. */
  | { kind: "parse"; raw: Uint8Array; endpoint: EndpointName; maxTextBytes: number; transcript: boolean }
  /** The body with `model` set to another name. */
  | { kind: "rewrite"; raw: Uint8Array; model: string }
  /** The body translated to another format (formats/translate.ts), or the 400 that refuses it. */
  | { kind: "translate"; raw: Uint8Array; from: FormatName; to: FormatName; model: string; defaultMaxTokens: number }
  /** The body with its caller text's PII redacted (redaction.ts); the body as it came, and no counts, when none was found. */
  | { kind: "redact"; raw: Uint8Array; endpoint: EndpointName; entityTypes: readonly string[] };

export interface JobResults {
  check: DetectorBlock | null;
  parse: { summary: BodySummary | null; raw: Uint8Array };
  rewrite: Uint8Array;
  translate: { ok: true; raw: Uint8Array; streamUsage: boolean } | { ok: false; status: number; message: string };
  redact: { raw: Uint8Array; counts: EntityCounts | null };
}

export type WorkerAnswer = { id: number; value: JobResults[WorkerJob["kind"]] } | { id: number; error: string };

const data = workerData as DetectorData;
const detectors = {
  pii: createPiiDetector(),
  injection: createInjectionDetector(parseInjectionWeights(data.injectionWeights)),
  content: createContentDetector(parseContentLexicon(data.contentLexicon)),
};

/** The JSON object of a body passed as bytes. */
const parseBytes = (raw: Uint8Array) => parseObject(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength));

parentPort?.on("message", ({ id, job }: { id: number; job: WorkerJob }) => {
  try {
    switch (job.kind) {
      case "check":
        parentPort?.postMessage({ id, value: detect(detectors, job.check, job.text) ?? null } satisfies WorkerAnswer);
        return;
      case "parse": {
        const body = parseBytes(job.raw);
        const value = { summary: body ? summarize(body, job.endpoint, job.maxTextBytes, job.transcript) : null, raw: job.raw };
        // The body came over without a copy, and goes back the same way: the gateway sends it on.
        parentPort?.postMessage({ id, value } satisfies WorkerAnswer, job.raw.buffer instanceof ArrayBuffer ? [job.raw.buffer] : []);
        return;
      }
      case "rewrite": {
        const body = parseBytes(job.raw) ?? {};
        const rewritten = new Uint8Array(Buffer.from(JSON.stringify({ ...body, model: job.model })));
        parentPort?.postMessage({ id, value: rewritten } satisfies WorkerAnswer, [rewritten.buffer]);
        return;
      }
      case "redact": {
        const body = parseBytes(job.raw) ?? {};
        const counts = redactRequest(detectors.pii, endpointSpecs[job.endpoint], body, job.entityTypes);
        // The body came over without a copy: it goes back the same way when nothing changed.
        const value = { raw: counts ? new Uint8Array(Buffer.from(JSON.stringify(body))) : job.raw, counts: counts ?? null };
        parentPort?.postMessage({ id, value } satisfies WorkerAnswer, value.raw.buffer instanceof ArrayBuffer ? [value.raw.buffer] : []);
        return;
      }
      case "translate": {
        const value = translateInWorker(job);
        parentPort?.postMessage({ id, value } satisfies WorkerAnswer, value.ok ? [value.raw.buffer as ArrayBuffer] : []);
        return;
      }
    }
  } catch (err) {
    parentPort?.postMessage({ id, error: err instanceof Error ? err.message : String(err) } satisfies WorkerAnswer);
  }
});

function translateInWorker(job: Extract<WorkerJob, { kind: "translate" }>): JobResults["translate"] {
  const body = parseBytes(job.raw) ?? {};
  try {
    const translated = translateRequest(body, job.from, job.to, job.model, job.defaultMaxTokens);
    return { ok: true, raw: new Uint8Array(translated.body), streamUsage: translated.streamUsage };
  } catch (err) {
    if (err instanceof GatewayError) return { ok: false, status: err.status, message: err.message };
    throw err;
  }
}
