/**
 * The floor the gateway is compared with: a bare pass-through proxy, run as a child process of
 * the bench (`node --expose-gc bench/gateway/bare-proxy.ts`). A node:http server reads the
 * request body, sends it to the provider with an undici Pool (as the gateway does: same pool
 * size, the body as one Buffer) and pipes the answer back as it arrives. No key, no policy, no
 * parsing, no logging.
 *
 * Environment: BENCH_UPSTREAM (the provider's origin), BENCH_CONNECTIONS (the pool size).
 * It tells the bench its port with {type: "ready", port}.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pipeline } from "node:stream";
import { Pool } from "undici";
import "./gc-hook.ts";
import { tell } from "./ipc.ts";

const upstream = process.env.BENCH_UPSTREAM;
if (!upstream) throw new Error("BENCH_UPSTREAM is required");
const pool = new Pool(upstream, { connections: Number(process.env.BENCH_CONNECTIONS ?? "256") });

function forward(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): void {
  const headers: Record<string, string> = { "content-type": req.headers["content-type"] ?? "application/json" };
  if (req.headers.authorization) headers.authorization = req.headers.authorization;
  pool.request({ method: "POST", path: req.url ?? "/", headers, body }).then(
    (answer) => {
      const out: http.OutgoingHttpHeaders = {};
      for (const name of ["content-type", "content-length", "cache-control"]) {
        const value = answer.headers[name];
        if (value !== undefined) out[name] = value;
      }
      res.writeHead(answer.statusCode, out);
      pipeline(answer.body, res, () => undefined);
    },
    () => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
      res.end();
    },
  );
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
