import { performance } from "node:perf_hooks";
import { Buffer } from "node:buffer";
import { randomUUID } from "node:crypto";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo } from "node:net";
import type { NodeHandlerFn, NodeServerRequest, NodeServerResponse } from "./http.ts";
import type { Logger } from "./logger.ts";
import { drainConnections } from "./drain.ts";
import { validHost } from "./urls.ts";

export interface Listener {
  port: number;
  /**
   * Stops taking connections, lets the requests in flight finish for up to `drainMs` (0: cut them
   * at once), then closes every connection.
   */
  close(drainMs?: number): Promise<void>;
}

/**
 * How long a connection may keep the server waiting for the client. None of them bounds a
 * response: a slow answer or a long stream is the server's to send, and is never cut by these.
 */
export interface ConnectionTimeouts {
  /**
   * Until a request's headers are complete, from the connection's first byte or the request's
   * start; a connection that sends nothing at all is closed after this too.
   */
  headersTimeoutMs: number;
  /** Until the whole request, body included, has arrived. */
  requestTimeoutMs: number;
  /** A connection with no request in flight: HTTP/1.1 keep-alive, an HTTP/2 session with no frames. */
  idleTimeoutMs: number;
}

export interface ListenOptions {
  port: number;
  host: string;
  timeouts: ConnectionTimeouts;
  /** Told what a handler threw instead of answering; the caller gets a bare 500, the process lives on. */
  onHandlerError(err: unknown): void;
  /** Where the access log goes, one info line per request (docs/operations.md, "Logs"); absent: off. */
  accessLog?: Logger;
}

/** The bytes that open every HTTP/2 connection with prior knowledge, as far as we read them. */
const H2_PREFACE = Buffer.from("PRI");

/**
 * One port for HTTP/1.1 and cleartext HTTP/2 (h2c with prior knowledge, which is how gRPC
 * clients speak without TLS). The first bytes of a connection tell which: an HTTP/2 client
 * opens with the "PRI * HTTP/2.0" preface, which no HTTP/1.1 request does.
 */
export async function listen(handler: NodeHandlerFn, options: ListenOptions): Promise<Listener> {
  const { timeouts } = options;
  const guarded = guard(handler, options.onHandlerError, options.accessLog);
  const h1 = http.createServer(http1Timeouts(timeouts), guarded);
  // h1 never listens itself: connections are handed to it. Node starts the tracking that enforces
  // headersTimeout and requestTimeout (and that closeIdleConnections needs) on "listening".
  h1.emit("listening");
  const h2 = http2.createServer({}, guarded);
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    idleDeadline(session, timeouts.idleTimeoutMs);
  });
  h2.on("stream", (stream) => bodyDeadline(stream, timeouts.requestTimeoutMs));

  const sockets = new Set<net.Socket>();
  // As http.createServer makes its own: Nagle off, and a client's FIN (HTTP/1.0 callers send
  // one right after the request) left for the HTTP/1.1 server to handle after it has answered.
  const server = net.createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    // Until the first bytes arrive the socket is neither server's, so neither times it out.
    const onSilence = () => socket.destroy();
    socket.setTimeout(timeouts.headersTimeoutMs, onSilence);
    let head: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const known = Math.min(head.length, H2_PREFACE.length);
      const isH2 = head.subarray(0, known).equals(H2_PREFACE.subarray(0, known));
      // "P" or "PR" could still become either: wait for more.
      if (isH2 && head.length < H2_PREFACE.length) return;
      socket.off("data", onData);
      socket.off("error", onError);
      socket.off("end", onError);
      socket.setTimeout(0, onSilence);
      // A standalone HTTP/2 server's sockets close on the client's FIN.
      if (isH2) socket.allowHalfOpen = false;
      socket.pause();
      socket.unshift(head);
      (isH2 ? h2 : h1).emit("connection", socket);
      process.nextTick(() => socket.resume());
    };
    // A reset (or a FIN) before the first bytes: nobody else listens yet, and an unheard error would throw.
    const onError = () => socket.destroy();
    socket.on("data", onData);
    socket.on("error", onError);
    socket.on("end", onError);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: async (drainMs = 0) => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // HTTP/2 sessions (gRPC) are told to finish their streams and take no new ones.
      for (const session of sessions) session.close();
      await drainConnections(h1, () => sockets.size, drainMs);
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/**
 * The timeouts as Node's HTTP/1.1 server takes them. Node's requestTimeout covers receiving the
 * request only. Its checks run every connectionsCheckingInterval (30 s by default, which would
 * let a 60 s timeout run to 90 s): here a quarter of the shortest timeout, at most a second.
 */
export function http1Timeouts(timeouts: ConnectionTimeouts): http.ServerOptions {
  return {
    headersTimeout: timeouts.headersTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    keepAliveTimeout: timeouts.idleTimeoutMs,
    connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(timeouts.headersTimeoutMs / 4))),
  };
}

/** Streams open on each HTTP/2 session: a session with one is not idle, however quiet. */
const openStreams = new WeakMap<http2.Http2Session, number>();

/**
 * Closes an HTTP/2 session that has had no frames for `ms` and has no stream open. A stream the
 * server is still answering keeps it (its body, if it is still awaited, has its own deadline);
 * the idle clock starts again when the last stream closes. The client's pings do not count.
 */
function idleDeadline(session: http2.ServerHttp2Session, ms: number): void {
  const onIdle = () => {
    if ((openStreams.get(session) ?? 0) === 0) session.destroy();
  };
  openStreams.set(session, 0);
  // One listener for the session's life; setTimeout(ms) alone (re)starts the clock.
  session.on("timeout", onIdle);
  session.setTimeout(ms);
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    openStreams.set(session, (openStreams.get(session) ?? 0) + 1);
    stream.once("close", () => {
      const left = (openStreams.get(session) ?? 1) - 1;
      openStreams.set(session, left);
      if (left === 0 && !session.destroyed) session.setTimeout(ms);
    });
  });
}

/**
 * HTTP/2 has no requestTimeout of its own: a stream whose body has not all arrived in time is
 * reset. A stream that carried no body (END_STREAM on its headers) has nothing to wait for.
 */
function bodyDeadline(stream: http2.ServerHttp2Stream, ms: number): void {
  if (stream.endAfterHeaders) return;
  const timer = setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), ms);
  timer.unref();
  const clear = () => clearTimeout(timer);
  stream.once("end", clear);
  stream.once("close", clear);
}

/**
 * The handler, with the request's authority made safe first, and a throw turned into a 500: one
 * request must never end the process. Every request but the operators' endpoints gets its request
 * ID back, and its access-log line when it is done.
 */
function guard(handler: NodeHandlerFn, onError: (err: unknown) => void, accessLog: Logger | undefined): NodeHandlerFn {
  return (req, res) => {
    try {
      ensureAuthority(req);
      identify(req, res, accessLog);
      handler(req, res);
    } catch (err) {
      onError(err);
      if (res.headersSent) res.destroy();
      else {
        res.statusCode = 500;
        res.end();
      }
    }
  };
}

/** Paths whose requests are neither logged nor given a request ID: probes and scrapes. */
const OPERATOR_PATHS = new Set(["/healthz", "/readyz", "/metrics"]);

/**
 * The request's ID (the caller's X-Request-ID, or one made) in the response's x-request-id, and,
 * with an access log, one line when the response is done or the caller left ('close' comes once
 * either way, on HTTP/1.1 and HTTP/2).
 */
function identify(req: NodeServerRequest, res: NodeServerResponse, accessLog: Logger | undefined): void {
  const url = req.url ?? "/";
  const query = url.indexOf("?");
  const path = query === -1 ? url : url.slice(0, query);
  if (OPERATOR_PATHS.has(path)) return;
  const sent = req.headers["x-request-id"];
  const own = Array.isArray(sent) ? sent[0] : sent;
  const requestId = own || randomUUID();
  // What is handled next (RPC spans, log lines) sees the one ID, made or the caller's.
  if (!own) req.headers["x-request-id"] = requestId;
  // As the gateway does: an ID a response header cannot carry as is, or a very long one, is not echoed.
  if (requestId.length <= 256 && !/[^\t\x20-\x7e\x80-\xff]/.test(requestId)) res.setHeader("x-request-id", requestId);
  if (!accessLog?.isLevelEnabled("info")) return;
  const started = performance.now();
  res.once("close", () => {
    accessLog.info({ requestId, method: req.method, path, status: res.statusCode, latencyMs: Math.round(performance.now() - started) }, "request");
  });
}

/**
 * connect-node builds the call's URL from Host (HTTP/1.1) or :authority (HTTP/2) and throws when
 * there is none or it is not a host (`a b`, `[::1`). Such a value is the caller's junk: it is
 * replaced by the address the caller reached, which is true and always parses.
 */
function ensureAuthority(req: NodeServerRequest): void {
  const h2 = req.httpVersionMajor === 2;
  // HTTP/2 callers may send Host instead of :authority; connect-node reads either, in that order.
  const value = h2 ? (req.headers[":authority"] ?? req.headers.host) : req.headers.host;
  if (typeof value === "string" && validHost(value) !== undefined) return;
  req.headers[h2 ? ":authority" : "host"] = localAuthority(req.socket);
}

function localAuthority(socket: net.Socket | undefined): string {
  const address = socket?.localAddress;
  const port = socket?.localPort;
  if (!address || !port) return "localhost";
  return net.isIPv6(address) ? `[${address}]:${port}` : `${address}:${port}`;
}
