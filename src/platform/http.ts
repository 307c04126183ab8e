import { Buffer } from "node:buffer";
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

/** A body over its size cap: a request's (each door answers it in its own error shape), or an answer read whole with a cap (dispatch.ts). */
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
