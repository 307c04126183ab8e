import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel, startFakeProvider, type FakeProvider } from "./support/fake-providers.ts";
import { client, type Call } from "./support/http.ts";
import { setUpWaitMs, sleep, until } from "./support/wait.ts";
import { waitingOnLock } from "./support/database.ts";

/**
 * A provider's slots (its in-flight cap) and a key's usage reservation are given back whenever the
 * caller leaves, however it leaves: while the gateway waits to write to it (back-pressure), or
 * before the provider was even called. Each provider here has one slot, so a slot that stays taken
 * shows as the next call's 503 "no upstream capacity".
 */

const families = [
  { endpoint: "messages", path: "/v1/messages", model: "claude" },
  { endpoint: "responses", path: "/v1/responses", model: "gpt" },
] as const;

let t: TestApp;
let admin: Call;
let anthropic: FakeProvider;
let openai: FakeProvider;
let endless: EndlessProvider;

async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await admin("POST", path, { body });
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.body as Record<string, unknown>;
}

/** A gateway key of its own, with a daily limit far from reached (so every call holds a reservation). */
async function newKey(): Promise<{ secret: string; limitId: string }> {
  const key = await post("/v1/gateway/keys", { name: "leaver" });
  const limit = await post("/v1/gateway/usage-limits", { scope: "key", subjectId: key.id, period: "daily", tokenLimit: 1_000_000_000 });
  await t.app.gateway!.watcher.reload();
  return { secret: key.secret as string, limitId: limit.id as string };
}

beforeAll(async () => {
  t = await startTestApp();
  admin = client(t.baseUrl, t.adminKey);
  [anthropic, openai, endless] = await Promise.all([startFakeProvider("anthropic"), startFakeProvider("openai"), startEndlessProvider()]);
  // One provider of one slot per test, so that a slot one test leaves taken cannot fail another.
  let priority = 1;
  for (const family of families) {
    for (const test of ["stream", "early"]) {
      const fake = family.endpoint === "messages" ? anthropic : openai;
      const name = `${fake.kind}-${test}`;
      const baseUrl = test === "stream" ? endless.url : fake.url;
      await post("/v1/gateway/providers", { name, kind: fake.kind, baseUrl, apiKey: fake.apiKey, maxInFlight: 1 });
      await post("/v1/gateway/routing-rules", { priority: priority++, models: [`${family.model}-${test}*`], providerName: name });
    }
  }
});

afterAll(async () => {
  await Promise.all([anthropic?.close(), openai?.close(), endless?.close()]);
  await t?.stop();
});

type Family = (typeof families)[number];

function bodyFor(family: Family, model: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return family.endpoint === "messages"
    ? { model, max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...extra }
    : { model, max_output_tokens: 100, input: "hi", ...extra };
}

/** A raw HTTP/1.1 request on a socket of our own, so that the test decides when (and whether) to read. */
async function rawRequest(path: string, body: Record<string, unknown>, key: string): Promise<net.Socket> {
  const socket = net.connect(t.app.gateway!.port, "127.0.0.1");
  await once(socket, "connect");
  const payload = Buffer.from(JSON.stringify(body));
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${payload.length}\r\n\r\n`,
  );
  socket.write(payload);
  return socket;
}

async function statusOf(family: Family, model: string, key: string): Promise<number> {
  const res = await fetch(t.gatewayUrl + family.path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(bodyFor(family, model)),
  });
  await res.arrayBuffer();
  return res.status;
}

async function reserved(id: string): Promise<number> {
  const res = await admin("GET", "/v1/gateway/usage/limits");
  const items = (res.body as { items: { limit: { id: string }; reserved: number }[] }).items;
  return Number(items.find((item) => item.limit.id === id)!.reserved);
}

/**
 * The slot and the reservation come back at once when the caller leaves; 5 s is a generous
 * margin over "at once" (a few event-loop turns and one settle). Before, they were held for ever
 * (the stream), or for the whole provider call (a minute here).
 */
const releaseDeadlineMs = 5_000;

describe.each(families)("$endpoint: a streamed caller that leaves while the gateway waits to write to it", (family) => {
  it("gives the provider slot and the usage reservation back, and stops the provider call", { timeout: 90_000 }, async () => {
    const own = await newKey();
    const model = `${family.model}-stream`;
    const socket = await rawRequest(family.path, bodyFor(family, model, { stream: true }), own.secret);
    // The caller has its first bytes and reads no more. The provider never stops, so the sockets
    // between the gateway and the caller fill, and the gateway waits to write; then the caller leaves.
    await until(async () => socket.readableLength >= socket.readableHighWaterMark, "the caller's buffer to fill", setUpWaitMs);
    await until(async () => endless.open === 1, "the provider call", setUpWaitMs);
    socket.destroy();

    await until(async () => endless.open === 0, "the provider call to be stopped", releaseDeadlineMs);
    const refusedMeanwhile: number[] = [];
    await until(async () => {
      const status = await statusOf(family, `${family.model}-stream-plain`, own.secret);
      if (status !== 200) refusedMeanwhile.push(status);
      return status === 200;
    }, "the provider slot to come back", releaseDeadlineMs);
    // Nothing but the slot's own 503 can have been seen while waiting.
    expect(refusedMeanwhile.every((status) => status === 503)).toBe(true);
    await until(async () => (await reserved(own.limitId)) === 0, "the reservation to be released", releaseDeadlineMs);
  });
});

describe.each(families)("$endpoint: a caller that leaves before the provider is called", (family) => {
  it("takes no provider slot, and its reservation is released", { timeout: 90_000 }, async () => {
    const own = await newKey();
    const model = `${family.model}-early`;
    // A first call makes the key's usage counter; then the test holds the counter's row lock, so
    // that the next call waits in admission, and its caller leaves meanwhile.
    expect(await statusOf(family, model, own.secret)).toBe(200);
    const lock = new pg.Client({ connectionString: t.database.url });
    await lock.connect();
    try {
      await lock.query("begin");
      await lock.query("select 1 from usage_counter where limit_id = $1 for update", [own.limitId]);
      const fake = family.endpoint === "messages" ? anthropic : openai;
      const before = fake.requests.length;
      // The provider would keep the call for a minute: a slot taken for this call would stay taken.
      const socket = await rawRequest(family.path, bodyFor(family, fakeModel(model, { delayMs: 60_000 })), own.secret);
      await until(async () => (await waitingOnLock(lock)) === 1, "the call to wait in admission", setUpWaitMs);
      socket.destroy();
      // The gateway runs in this process: with its event loop idle for 200 ms, it has seen the
      // caller's socket close by then (the sleep orders two events; it bounds nothing).
      await sleep(200);
      await lock.query("commit");
      await until(async () => (await reserved(own.limitId)) === 0, "the reservation to be released", releaseDeadlineMs);
      expect(fake.requests.length).toBe(before);
      expect(await statusOf(family, model, own.secret)).toBe(200);
    } finally {
      await lock.end();
    }
  });
});

interface EndlessProvider {
  url: string;
  /** Streams being written now. */
  readonly open: number;
  close(): Promise<void>;
}

/**
 * A provider (either family, by path) whose stream never ends: after its opening events it writes
 * text deltas, 64 KiB at a time, as fast as its connection takes them, until the gateway hangs up.
 * A request without `stream: true` gets a small plain answer.
 */
async function startEndlessProvider(): Promise<EndlessProvider> {
  let open = 0;
  const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string; stream?: boolean };
      const messages = req.url === "/v1/messages";
      const usage = messages ? { input_tokens: 3, output_tokens: 4 } : { input_tokens: 3, output_tokens: 4, total_tokens: 7 };
      if (!body.stream) {
        const answer = JSON.stringify(messages ? { type: "message", model: body.model, content: [], usage } : { object: "response", model: body.model, output: [], usage });
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) });
        res.end(answer);
        return;
      }
      open += 1;
      res.on("close", () => (open -= 1));
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(messages
        ? event("message_start", { message: { type: "message", model: body.model, content: [], usage: { input_tokens: 3, output_tokens: 1 } } })
        : event("response.created", { sequence_number: 0, response: { object: "response", model: body.model, output: [] } }));
      const delta = messages
        ? event("content_block_delta", { index: 0, delta: { type: "text_delta", text: "endless " } })
        : event("response.output_text.delta", { sequence_number: 1, item_id: "msg_1", output_index: 0, content_index: 0, delta: "endless " });
      const chunk = Buffer.from(delta.repeat(Math.ceil(65_536 / delta.length)));
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get open() {
      return open;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
