import { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import type { JsonValue } from "@bufbuild/protobuf";
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";

/** connect-node's handler types, which it does not export by name. */
export type NodeHandlerFn = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
export type NodeServerRequest = Parameters<NodeHandlerFn>[0];
export type NodeServerResponse = Parameters<NodeHandlerFn>[1];

/** Writes a whole response; works the same on HTTP/1.1 and HTTP/2 responses. */
export function respond(res: NodeServerResponse, status: number, contentType: string | undefined, body: string): void {
  res.statusCode = status;
  if (contentType) res.setHeader("content-type", contentType);
  res.setHeader("content-length", Buffer.byteLength(body));
  res.end(body);
}

export function respondJson(res: NodeServerResponse, status: number, body: JsonValue): void {
  respond(res, status, "application/json", JSON.stringify(body));
}

/** A request body over its size cap. Each door answers it in its own error shape. */
export class BodyTooLarge extends Error {}

/** The whole body, or BodyTooLarge as soon as it is known to pass `maxBytes`. */
export function readBody(req: Readable & { headers: Record<string, string | string[] | undefined> }, maxBytes: number): Promise<Buffer> {
  if (Number(req.headers["content-length"] ?? 0) > maxBytes) return Promise.reject(new BodyTooLarge());
  return readAll(req, maxBytes);
}

/**
 * A stream's whole content, or BodyTooLarge (and the stream destroyed, as an abandoned `for await`
 * does) as soon as it passes `maxBytes`. It listens to the stream's events rather than iterating
 * it: `for await` over a stream allocates an async iterator, its end-of-stream tracking and
 * promises per chunk, several KB a gateway call, and the young generation's collections are the
 * gateway's tail (docs/performance.md, "Allocation per call").
 */
export function readAll(stream: Readable, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer> {
  if (stream.destroyed) return Promise.reject(stream.errored ?? prematureClose());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Once settled, the listeners stay and do nothing: taking four off a stream costs more than
    // the flag (Readable.removeListener was a measurable share of a gateway call).
    let done = false;
    const onData = (chunk: Buffer): void => {
      if (done) return;
      size += chunk.length;
      if (size > maxBytes) {
        done = true;
        abandon(stream);
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      if (done) return;
      done = true;
      // One chunk is the body as it is: no copy.
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error): void => {
      if (done) return;
      done = true;
      reject(err);
    };
    // Closed before its end, with no error: what `for await` reports as a premature close.
    const onClose = (): void => {
      if (done) return;
      done = true;
      reject(stream.errored ?? prematureClose());
    };
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
    stream.on("close", onClose);
  });
}

/** Chunks {@link readChunks} holds before it pauses the stream, and holds at most once it resumed it. */
const HELD_CHUNKS_HIGH = 16;
const HELD_CHUNKS_LOW = 4;

/**
 * A stream's chunks as an async iterator, read through its events as {@link readAll} reads it, for
 * the same reason: `for await` over a stream costs each chunk an iterator step, promises and
 * end-of-stream bookkeeping (about 15 µs of a 20-chunk stream in process, against its events).
 * Errors (and a close before the end, a premature close) reject
 * `next()` once `mapError` has typed them; `return()` destroys the stream, as an abandoned
 * `for await` does. While the reader does not keep up, the stream is paused, so that what it
 * holds stays bounded.
 */
export function readChunks(stream: Readable, mapError: (err: unknown) => unknown = (err) => err): AsyncIterableIterator<Buffer> {
  const held: Buffer[] = [];
  let ended = false;
  let failure: { error: unknown } | undefined;
  let waiting: { resolve: (result: IteratorResult<Buffer, undefined>) => void; reject: (err: unknown) => void } | undefined;
  const stop = (): void => {
    stream.off("data", onData);
    stream.off("end", onEnd);
    stream.off("error", onError);
    stream.off("close", onClose);
  };
  const wake = (): void => {
    const reader = waiting;
    if (reader === undefined) return;
    if (held.length > 0) {
      waiting = undefined;
      reader.resolve({ done: false, value: held.shift()! });
    } else if (failure !== undefined) {
      waiting = undefined;
      const { error } = failure;
      failure = undefined;
      ended = true;
      reader.reject(error);
    } else if (ended) {
      waiting = undefined;
      reader.resolve({ done: true, value: undefined });
    }
  };
  const onData = (chunk: Buffer): void => {
    held.push(chunk);
    if (held.length >= HELD_CHUNKS_HIGH) stream.pause();
    wake();
  };
  const onEnd = (): void => {
    stop();
    ended = true;
    wake();
  };
  const fail = (err: unknown): void => {
    stop();
    failure ??= { error: mapError(err) };
    wake();
  };
  const onError = (err: Error): void => fail(err);
  const onClose = (): void => fail(stream.errored ?? prematureClose());
  if (stream.destroyed) failure = { error: mapError(stream.errored ?? prematureClose()) };
  else {
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
    stream.on("close", onClose);
  }
  const chunks: AsyncIterableIterator<Buffer> = {
    next() {
      if (held.length > 0) {
        const value = held.shift()!;
        if (held.length <= HELD_CHUNKS_LOW && stream.isPaused() && !ended) stream.resume();
        return Promise.resolve({ done: false, value });
      }
      // A failure is reported once, after every chunk that came before it.
      if (failure !== undefined) {
        const { error } = failure;
        ended = true;
        failure = undefined;
        return Promise.reject(error);
      }
      if (ended) return Promise.resolve({ done: true, value: undefined });
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject };
      });
    },
    return() {
      stop();
      ended = true;
      failure = undefined;
      held.length = 0;
      if (!stream.destroyed) stream.destroy();
      return Promise.resolve({ done: true, value: undefined });
    },
    [Symbol.asyncIterator]: () => chunks,
  };
  return chunks;
}

/**
 * Destroys a stream read no further, as an abandoned `for await` does (Node's stream destroyer): a
 * server's HTTP/1 request first lets go of its socket, so that the answer (a 413) can still be
 * written on it; destroyed with it, the connection would be cut before any answer.
 */
function abandon(stream: Readable): void {
  // A client's response holds the request it answers (`req`); a server's request holds none.
  if (stream instanceof IncomingMessage && (stream as { req?: unknown }).req === undefined) {
    (stream as { socket: unknown }).socket = null;
  }
  stream.destroy();
}

function prematureClose(): Error {
  return Object.assign(new Error("Premature close"), { code: "ERR_STREAM_PREMATURE_CLOSE" });
}

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerToken(header: string | null | undefined): string | undefined {
  return header ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;
}
