import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo } from "node:net";
import type { NodeHandlerFn } from "./http.ts";

export interface Listener {
  port: number;
  close(): Promise<void>;
}

/**
 * One port for HTTP/1.1 and cleartext HTTP/2 (h2c with prior knowledge, which is how gRPC
 * clients speak without TLS). The first bytes of a connection tell which: an HTTP/2 client
 * opens with the "PRI * HTTP/2.0" preface, which no HTTP/1.1 request does.
 */
export async function listen(handler: NodeHandlerFn, port: number, host: string): Promise<Listener> {
  const h1 = http.createServer(handler);
  const h2 = http2.createServer({}, handler);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.once("data", (first) => {
      socket.pause();
      socket.unshift(first);
      (first.subarray(0, 3).toString("latin1") === "PRI" ? h2 : h1).emit("connection", socket);
      process.nextTick(() => socket.resume());
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        h1.closeIdleConnections();
        for (const socket of sockets) socket.destroy();
      }),
  };
}
