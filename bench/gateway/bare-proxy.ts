/**
 * The floor the gateway is compared with: a bare pass-through proxy, run as a child process of
 * the bench (`node --expose-gc bench/gateway/bare-proxy.ts`). A node:http server reads the
 * request body, sends it to the provider through an undici Pool (as the gateway does: same pool
 * size, the body as one Buffer, undici's `dispatch` with a plain handler) and writes the answer
 * back as it arrives, holding the provider back while the caller is behind. No key, no policy,
 * no parsing, no logging.
 *
 * Until 2026-12-01 it used undici's `request` API and `stream.pipeline`: every call's objects then
 * outlived the young generation's collections (12 KB a call promoted, a scavenge pause of about
 * 10 ms every third of a second at 1,000 calls a second), which made the floor itself slower
 * and its tail longer (docs/performance.md, "What survives a scavenge").
 *
 * Environment: BENCH_UPSTREAM (the provider's origin), BENCH_CONNECTIONS (the pool size).
 * It tells the bench its port with {type: "ready", port}.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Pool, type Dispatcher } from "undici";
import "./gc-hook.ts";
import { tell } from "./ipc.ts";

const upstream = process.env.BENCH_UPSTREAM;
if (!upstream) throw new Error("BENCH_UPSTREAM is required");
const pool = new Pool(upstream, { connections: Number(process.env.BENCH_CONNECTIONS ?? "256") });

function forward(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): void {
  const headers: Record<string, string> = { "content-type": req.headers["content-type"] ?? "application/json" };
  if (req.headers.authorization) headers.authorization = req.headers.authorization;
  const handler: Dispatcher.DispatchHandler = {
    onRequestStart() {},
    onResponseStart(controller, statusCode, answer) {
      if (statusCode < 200) return;
      const out: http.OutgoingHttpHeaders = {};
      for (const name of ["content-type", "content-length", "cache-control"]) {
        const value = answer[name];
        if (value !== undefined) out[name] = value;
      }
      res.writeHead(statusCode, out);
      res.on("drain", () => controller.resume());
      res.on("close", () => {
        if (!res.writableFinished) controller.abort(new Error("the caller left"));
      });
    },
    onResponseData(controller, chunk) {
      if (!res.write(chunk)) controller.pause();
    },
    onResponseEnd() {
      res.end();
    },
    onResponseError() {
      if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
      res.end();
    },
  };
  pool.dispatch({ method: "POST", path: req.url ?? "/", headers, body }, handler);
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => forward(req, res, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
});
// As the gateway's listener.
server.keepAliveTimeout = 65_000;
server.listen({ port: 0, host: "127.0.0.1" }, () => {
  tell({ type: "ready", port: (server.address() as AddressInfo).port });
});
