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
export async function readBody(req: AsyncIterable<Buffer> & { headers: Record<string, string | string[] | undefined> }, maxBytes: number): Promise<Buffer> {
  if (Number(req.headers["content-length"] ?? 0) > maxBytes) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > maxBytes) throw new BodyTooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerToken(header: string | null | undefined): string | undefined {
  return header ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;
}
