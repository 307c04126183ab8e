/**
 * Both listeners let go of clients that keep them waiting: a connection that sends nothing, half
 * a request head, half a body, a body a byte at a time, or nothing after its last request. The
 * timeouts are set small here (WARDEN_HTTP_*); a response that takes longer than all of them, a
 * slow provider or a long stream, is never cut by them.
 */
import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel } from "./support/fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";

const HEADERS_TIMEOUT_MS = 300;
const REQUEST_TIMEOUT_MS = 600;
const IDLE_TIMEOUT_MS = 300;
/**
 * A connection must be closed within its timeout plus this. Generous on purpose: Node checks the
 * header and request timeouts every quarter of the headers timeout, keep-alive adds its own second
 * (keepAliveTimeoutBuffer), and a loaded test machine adds more; a connection left open for good,
 * the bug, is far past it.
 */
const MARGIN_MS = 4_000;

let t: TestApp;
let g: GatewayFixture;
let ports: { name: string; port: number }[];

beforeAll(async () => {
  t = await startTestApp({
    env: {
      WARDEN_HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      WARDEN_HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      WARDEN_HTTP_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
    },
  });
  g = await setUpGateway(t);
  ports = [
    { name: "API", port: t.app.apiPort! },
    { name: "gateway", port: t.app.gateway!.port },
  ];
});
afterAll(async () => {
  await g?.close();
  await t?.stop();
});

interface Closed {
  /** Milliseconds from the last byte we sent to the server's close. */
  afterMs: number;
  /** What the server sent before it closed. */
  received: string;
}

/**
 * Opens a connection, writes `chunks` (one per `everyMs` when given), and resolves when the server
 * closes it. Rejects after `timeout + MARGIN_MS` with the connection still open.
 */
function holdOpen(port: number, chunks: string[], timeoutMs: number, everyMs = 0): Promise<Closed> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let received = "";
    let lastWrite = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`still open ${timeoutMs + MARGIN_MS} ms after the last byte; received ${JSON.stringify(received)}`));
    }, chunks.length * everyMs + timeoutMs + MARGIN_MS);
    socket.on("data", (data: Buffer) => (received += data.toString("latin1")));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(giveUp);
      clearTimeout(timer);
      resolve({ afterMs: performance.now() - lastWrite, received });
    });
    socket.on("connect", () => {
      const queue = [...chunks];
      const next = () => {
        const chunk = queue.shift();
        if (chunk === undefined || socket.destroyed) return;
        socket.write(chunk);
        lastWrite = performance.now();
        if (queue.length > 0) timer = setTimeout(next, everyMs);
      };
      lastWrite = performance.now();
      next();
    });
  });
}

function authFor(name: string): string {
  return name === "API" ? `Bearer ${t.adminKey}` : `Bearer ${g.key}`;
}

function postPath(name: string): string {
  return name === "API" ? "/v1/projects" : "/v1/responses";
}

describe.each(["API", "gateway"])("the %s port", (name) => {
  const port = () => ports.find((p) => p.name === name)!.port;

  it("closes a connection that sends nothing, after the headers timeout", async () => {
    const closed = await holdOpen(port(), [], HEADERS_TIMEOUT_MS);
    expect(closed.afterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
    expect(closed.afterMs).toBeLessThan(HEADERS_TIMEOUT_MS + MARGIN_MS);
  });

  it("closes a connection that sends half a request head", async () => {
    const closed = await holdOpen(port(), [`GET /v1/projects HTTP/1.1\r\nHost: x\r\nAuthoriz`], HEADERS_TIMEOUT_MS);
    expect(closed.afterMs).toBeLessThan(HEADERS_TIMEOUT_MS + MARGIN_MS);
    expect(closed.received).toMatch(/^(HTTP\/1\.1 408 Request Timeout\r\n|$)/);
  });

  it("closes a connection whose body stops half-way", async () => {
    const head = `POST ${postPath(name)} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authFor(name)}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
    const closed = await holdOpen(port(), [head + `{"name":`], REQUEST_TIMEOUT_MS);
    expect(closed.afterMs).toBeLessThan(REQUEST_TIMEOUT_MS + MARGIN_MS);
    expect(closed.received).toMatch(/^(HTTP\/1\.1 408 Request Timeout\r\n|$)/);
  });

  it("closes a connection that trickles its body a byte at a time, by the request timeout, not by silence", async () => {
    const head = `POST ${postPath(name)} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authFor(name)}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
    // A byte every 100 ms: never silent for the headers or idle timeout, and 1000 bytes would take 100 s.
    const started = performance.now();
    const closed = await holdOpen(port(), [head, ...Array.from({ length: 1000 }, () => " ")], REQUEST_TIMEOUT_MS, 100);
    expect(performance.now() - started).toBeLessThan(REQUEST_TIMEOUT_MS + MARGIN_MS);
    expect(closed.received).toMatch(/^(HTTP\/1\.1 408 Request Timeout\r\n|$)/);
  });

  it("closes a kept-alive connection that sends nothing after its request was answered, after the idle timeout", async () => {
    const closed = await holdOpen(port(), [`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`], IDLE_TIMEOUT_MS);
    expect(closed.received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(closed.afterMs).toBeLessThan(IDLE_TIMEOUT_MS + 1_000 + MARGIN_MS);
  });
});

describe("the API port over HTTP/2", () => {
  it("closes a connection that sent part of the HTTP/2 preface and stopped", async () => {
    const closed = await holdOpen(t.app.apiPort!, ["PR"], HEADERS_TIMEOUT_MS);
    expect(closed).toMatchObject({ received: "" });
    expect(closed.afterMs).toBeLessThan(HEADERS_TIMEOUT_MS + MARGIN_MS);
  });

  it("closes a session with no frames after the idle timeout", async () => {
    const session = http2.connect(t.baseUrl);
    const started = performance.now();
    await new Promise<void>((resolve) => session.on("close", resolve));
    expect(performance.now() - started).toBeLessThan(IDLE_TIMEOUT_MS + MARGIN_MS);
  });

  it("resets a stream whose body has not all arrived by the request timeout, even on a busy session", async () => {
    const session = http2.connect(t.baseUrl);
    session.on("error", () => undefined);
    // Pings keep the session from ever being idle: only the stream's own deadline can end it.
    const pinger = setInterval(() => session.ping(() => undefined), 50);
    try {
      const stream = session.request({ ":method": "POST", ":path": "/v1/projects", "content-type": "application/json", authorization: `Bearer ${t.adminKey}` });
      stream.on("error", () => undefined);
      stream.write('{"name":');
      const started = performance.now();
      const code = await new Promise<number>((resolve) => stream.on("close", () => resolve(stream.rstCode ?? -1)));
      expect(code).toBe(http2.constants.NGHTTP2_CANCEL);
      expect(performance.now() - started).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
      expect(performance.now() - started).toBeLessThan(REQUEST_TIMEOUT_MS + MARGIN_MS);
      expect(session.destroyed).toBe(false);
    } finally {
      clearInterval(pinger);
      session.destroy();
    }
  });

  it("serves a request on a session, as before", async () => {
    const session = http2.connect(t.baseUrl);
    try {
      const stream = session.request({ ":method": "GET", ":path": "/v1/projects", authorization: `Bearer ${t.adminKey}` });
      let status = 0;
      stream.on("response", (headers) => (status = Number(headers[":status"])));
      stream.resume();
      await new Promise((resolve) => stream.on("close", resolve));
      expect(status).toBe(200);
    } finally {
      session.destroy();
    }
  });
});

describe("responses are not bounded by these timeouts", () => {
  it("a provider that answers after all of them have passed is answered, plain and streamed", async () => {
    const delayMs = REQUEST_TIMEOUT_MS + HEADERS_TIMEOUT_MS + IDLE_TIMEOUT_MS + 300;
    const plain = await fetch(`${t.gatewayUrl}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: fakeModel("gpt-slow", { delayMs }), input: "Hi" }),
    });
    expect(plain.status).toBe(200);
    expect(((await plain.json()) as { status: string }).status).toBe("completed");

    const streamed = await fetch(`${t.gatewayUrl}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: fakeModel("claude-slow", { delayMs }), max_tokens: 5, stream: true, messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toMatch(/event: message_stop\n/);
  });

  it("a stream that stays open longer than all of them ends with the provider's own failure, not a cut", async () => {
    const created = await g.admin("POST", "/v1/gateway/providers", { body: { name: "anthropic-stalls", kind: "anthropic", baseUrl: g.anthropic.url, apiKey: g.anthropic.apiKey } });
    await g.admin("PATCH", `/v1/gateway/providers/${(created.body as { id: string }).id}`, { body: { bodyTimeoutMs: 2_000 } });
    await g.admin("POST", "/v1/gateway/routing-rules", { body: { priority: 1, models: ["stalls-*"], providerName: "anthropic-stalls" } });
    await t.app.gateway!.watcher.reload();
    const res = await fetch(`${t.gatewayUrl}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: fakeModel("stalls-x", { stallAfter: 2 }), max_tokens: 5, stream: true, messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.endsWith(`"message":"The provider stopped sending its response before it was complete."}}\n\n`)).toBe(true);
  });
});
