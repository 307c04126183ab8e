import type http from "node:http";

/** How often a draining server looks again for connections that have become idle. */
const DRAIN_POLL_MS = 50;

/**
 * Lets requests in flight finish before a server goes away: new connections are refused at once
 * (the caller has closed the listener), idle keep-alive connections are closed, and each
 * connection is closed as soon as its request is answered; whatever is still busy after `drainMs`
 * (a stream that does not end) is cut. Resolves when no connection is left.
 */
export async function drainConnections(server: http.Server, open: () => number, drainMs: number): Promise<void> {
  const deadline = Date.now() + drainMs;
  // A response that ends now closes its connection, so that a keep-alive client cannot hold it.
  server.on("request", (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (!res.headersSent) res.shouldKeepAlive = false;
  });
  server.closeIdleConnections();
  while (open() > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
    server.closeIdleConnections();
  }
  server.closeAllConnections();
}
