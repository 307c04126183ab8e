import { Worker } from "node:worker_threads";

/** What the exporter's thread is built from: plain data, as `workerData` must be. */
export interface SpanExportSettings {
  /** Where spans are posted (`…/v1/traces`). */
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Exports out at once, past which the SDK's exporter refuses one. */
  concurrencyLimit: number;
}

export interface SpanExportJob {
  id: number;
  body: Uint8Array;
  /** How many spans `body` holds. */
  spans: number;
}

export type SpanExportAnswer = { id: number; ok: true } | { id: number; ok: false; error: string };

/** Past the exporter's own deadline, how long a thread that has not answered is waited for. */
const GRACE_MS = 1_000;

/**
 * Encoded batches of spans sent to the collector from a thread of their own
 * (span-export-worker.ts). Why a thread: an export is an HTTP request, and on the gateway's thread
 * its objects go through the same undici and Node functions as the gateway's own calls. Counted
 * by instruction, a gateway tracing one request in ten ran 22.5k instructions a call more than
 * one not tracing, and 3.0k more when the same spans were made and queued but the exports not
 * sent: a few exports in a window of 4,000 calls left V8's code for those shared functions worse
 * for every call (docs/performance.md, "Span exports off the gateway's thread"). A thread has its
 * own isolate and its own compiled code; an export costs the gateway's thread one message.
 *
 * The thread starts with the first export, and keeps the process alive only while an export is out.
 */
export class SpanExportThread {
  readonly #settings: SpanExportSettings;
  #worker: Worker | undefined;
  #next = 1;
  readonly #pending = new Map<number, (answer: SpanExportAnswer) => void>();

  constructor(settings: SpanExportSettings) {
    this.#settings = settings;
  }

  /** Sends `body` (`spans` spans), whose buffer is transferred: the caller must not use it again. Never rejects. */
  send(body: Uint8Array, spans: number): Promise<SpanExportAnswer> {
    const worker = this.#worker ?? this.#start();
    const id = this.#next++;
    return new Promise((resolve) => {
      const guard = setTimeout(() => this.#settle({ id, ok: false, error: `the span exporter did not answer within ${this.#settings.timeoutMs + GRACE_MS} ms` }), this.#settings.timeoutMs + GRACE_MS);
      guard.unref();
      this.#pending.set(id, (answer) => {
        clearTimeout(guard);
        resolve(answer);
      });
      if (this.#pending.size === 1) worker.ref();
      const job: SpanExportJob = { id, body, spans };
      try {
        worker.postMessage(job, [body.buffer as ArrayBuffer]);
      } catch (err) {
        this.#settle({ id, ok: false, error: `the batch could not be handed to the span exporter: ${err instanceof Error ? err.message : String(err)}` });
      }
    });
  }

  /** Stops the thread; an export still out is answered as failed. */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    if (worker) await worker.terminate();
    this.#failAll("the span exporter was closed");
  }

  #settle(answer: SpanExportAnswer): void {
    const done = this.#pending.get(answer.id);
    if (done === undefined) return;
    this.#pending.delete(answer.id);
    if (this.#pending.size === 0) this.#worker?.unref();
    done(answer);
  }

  #failAll(error: string): void {
    for (const id of [...this.#pending.keys()]) this.#settle({ id, ok: false, error });
  }

  #start(): Worker {
    const worker = new Worker(new URL("./span-export-worker.ts", import.meta.url), { workerData: this.#settings });
    worker.unref();
    worker.on("message", (answer: SpanExportAnswer) => this.#settle(answer));
    // A thread that fails or exits takes its exports with it; the next export starts a new one.
    const lost = (error: string) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#failAll(error);
    };
    worker.on("error", (err) => lost(`the span exporter's thread failed: ${err.message}`));
    worker.on("exit", () => lost("the span exporter's thread exited"));
    this.#worker = worker;
    return worker;
  }
}
