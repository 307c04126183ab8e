import { Pool } from "undici";

/**
 * The load generator: undici Pools with keep-alive, the same code for every variant. Each call
 * reads the answer to its last byte and checks its status and length (the fake provider's bytes
 * reach the client unchanged through every variant), so a wrong answer fails the bench instead
 * of flattering it.
 */

export const responsesPath = "/v1/responses";

export interface Target {
  /** The variant's name in the report. */
  name: string;
  origin: string;
  /** Sent with every request: content-type and the variant's own authorization. */
  headers: Record<string, string>;
  /** The endpoint called; default POST /v1/responses. */
  path?: string;
}

export class UnexpectedAnswer extends Error {}

async function unexpected(target: Target, status: number, body: AsyncIterable<Buffer>, what: string): Promise<UnexpectedAnswer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString("utf8").slice(0, 500);
  return new UnexpectedAnswer(`${target.name}: ${what}: status ${status}: ${text}`);
}

/** One request, read to the end; checks a 200 and `expectedBytes` of body. */
export async function callOnce(pool: Pool, target: Target, body: Buffer, expectedBytes: number): Promise<void> {
  const res = await pool.request({ method: "POST", path: target.path ?? responsesPath, headers: target.headers, body });
  const stream = res.body as AsyncIterable<Buffer>;
  if (res.statusCode !== 200) throw await unexpected(target, res.statusCode, stream, "call");
  let bytes = 0;
  for await (const chunk of stream) bytes += chunk.length;
  if (bytes !== expectedBytes) throw new UnexpectedAnswer(`${target.name}: ${bytes} bytes of answer, expected ${expectedBytes}`);
}

/** One request, read to the end; its status, whatever it is (for probes). */
export async function statusOf(pool: Pool, target: Target, body: Buffer): Promise<number> {
  const res = await pool.request({ method: "POST", path: target.path ?? responsesPath, headers: target.headers, body });
  await res.body.dump();
  return res.statusCode;
}

/** `fire`, timed: each call's milliseconds go to `into`. */
export function timed(fire: () => Promise<void>, into: number[]): () => Promise<void> {
  return async () => {
    const start = performance.now();
    await fire();
    into.push(performance.now() - start);
  };
}

export interface StreamTiming {
  /** From sending the request to the first byte of the body (the first event), ms. */
  firstByte: number;
  /** From sending the request to the end of the body, ms. */
  total: number;
}

/** One streamed request, read to the end, timed; checks a 200 and `expectedBytes` of body. */
export async function streamOnce(pool: Pool, target: Target, body: Buffer, expectedBytes: number): Promise<StreamTiming> {
  const start = performance.now();
  const res = await pool.request({ method: "POST", path: target.path ?? responsesPath, headers: target.headers, body });
  const stream = res.body as AsyncIterable<Buffer>;
  if (res.statusCode !== 200) throw await unexpected(target, res.statusCode, stream, "stream");
  let firstByte = Number.NaN;
  let bytes = 0;
  for await (const chunk of stream) {
    if (bytes === 0) firstByte = performance.now() - start;
    bytes += chunk.length;
  }
  const total = performance.now() - start;
  if (bytes !== expectedBytes) throw new UnexpectedAnswer(`${target.name}: ${bytes} bytes of stream, expected ${expectedBytes}`);
  return { firstByte, total };
}

/** `count` calls of `fn`, `concurrency` in flight (closed loop); the elapsed milliseconds. */
export async function closedLoop(count: number, concurrency: number, fn: () => Promise<unknown>): Promise<number> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      await fn();
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return performance.now() - start;
}

export interface OpenLoopRun<T> {
  results: T[];
  /** How late each send went out against its schedule, ms: the generator's own precision. */
  lateness: number[];
  /** The rate actually achieved, sends per second. */
  rate: number;
}

/**
 * Open loop: send `count` requests at `ratePerSecond`, each at its scheduled time, whether or not
 * the earlier ones have been answered (a slow answer cannot slow the sending down, so it cannot
 * hide itself). A timer wakes at the next due time and sends everything due.
 */
export async function openLoop<T>(ratePerSecond: number, count: number, fire: () => Promise<T>): Promise<OpenLoopRun<T>> {
  const interval = 1000 / ratePerSecond;
  const results: T[] = new Array<T>(count);
  const lateness: number[] = [];
  const inFlight: Promise<void>[] = [];
  let sent = 0;
  let failure: unknown;
  const start = performance.now();
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (sent < count && start + sent * interval <= now && failure === undefined) {
        const index = sent++;
        lateness.push(now - (start + index * interval));
        inFlight.push(
          fire().then(
            (result) => {
              results[index] = result;
            },
            (err: unknown) => {
              failure ??= err;
            },
          ),
        );
      }
      if (sent < count && failure === undefined) setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
      else resolve();
    };
    tick();
  });
  const lastSend = performance.now();
  await Promise.all(inFlight);
  if (failure !== undefined) throw failure;
  return { results, lateness, rate: (count - 1) / ((lastSend - start) / 1000) };
}

export interface HeldStreams {
  count: number;
  /** Resolves when every stream has ended with the whole answer; rejects on the first failure. */
  finished: Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens `count` streams that the provider holds open after their first event, `batch` at a time
 * (each batch waits for the first event of all its streams, so connections are not opened faster
 * than a listen backlog takes them); resolves once all are open.
 */
export async function openHeldStreams(target: Target, body: Buffer, count: number, batch: number, expectedBytes: number): Promise<HeldStreams> {
  const pool = new Pool(target.origin, { connections: count, headersTimeout: 120_000, bodyTimeout: 120_000 });
  const endings: Promise<void>[] = [];
  try {
    for (let opened = 0; opened < count; opened += batch) {
      const firsts: Promise<void>[] = [];
      for (let i = opened; i < Math.min(count, opened + batch); i++) {
        let first!: () => void;
        const firstEvent = new Promise<void>((resolve) => (first = resolve));
        const ending = (async () => {
          const res = await pool.request({ method: "POST", path: target.path ?? responsesPath, headers: target.headers, body });
          const stream = res.body as AsyncIterable<Buffer>;
          if (res.statusCode !== 200) throw await unexpected(target, res.statusCode, stream, "held stream");
          let bytes = 0;
          for await (const chunk of stream) {
            if (bytes === 0) first();
            bytes += chunk.length;
          }
          if (bytes !== expectedBytes) throw new UnexpectedAnswer(`${target.name}: held stream ended after ${bytes} bytes, expected ${expectedBytes}`);
        })();
        ending.catch(() => undefined);
        endings.push(ending);
        // A stream that fails before its first event fails the batch.
        firsts.push(Promise.race([firstEvent, ending.then(() => undefined)]));
      }
      await Promise.all(firsts);
    }
  } catch (err) {
    await pool.destroy();
    throw err;
  }
  return {
    count,
    finished: Promise.all(endings).then(() => undefined),
    close: () => pool.destroy(),
  };
}

/** The items in the order of round `round`: rotated, so that none always goes first. */
export function rotation<T>(items: T[], round: number): T[] {
  const shift = round % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

/** Splits `total` into `rounds` near-equal parts. */
export function shares(total: number, rounds: number): number[] {
  return Array.from({ length: rounds }, (_, i) => Math.floor((total * (i + 1)) / rounds) - Math.floor((total * i) / rounds));
}
