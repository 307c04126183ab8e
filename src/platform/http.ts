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
