import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { SpanExportThread } from "../src/platform/span-export-thread.ts";

/**
 * The span exporter's thread (the SDK's OTLP/HTTP exporter) against collectors on loopback: what
 * it sends, what it retries, and what ends an export, as the thread answers the gateway's queue.
 */

interface Post {
  headers: IncomingMessage["headers"];
  body: Buffer;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A collector that answers the n-th post with `answer(n, res)`; its posts, in order. */
async function collector(answer: (n: number, res: ServerResponse) => void): Promise<{ url: string; posts: Post[] }> {
  const posts: Post[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      posts.push({ headers: req.headers, body: Buffer.concat(chunks) });
      answer(posts.length, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, posts };
}

/** The exporter's thread, posting to `url`; closed after the test. */
function threadTo(url: string, timeoutMs = 5_000): SpanExportThread {
  const thread = new SpanExportThread({ url, headers: { authorization: "Bearer t" }, timeoutMs, concurrencyLimit: 30 });
  closers.push(() => thread.close());
  return thread;
}

/** A fresh copy each time: a sent body's buffer is transferred to the thread. */
const data = () => new Uint8Array([10, 3, 1, 2, 3]);

describe("the span exporter's thread, against collectors on loopback", () => {
  it("posts the bytes as protobuf with the configured headers", async () => {
    const c = await collector((_n, res) => res.writeHead(200, { "content-type": "application/x-protobuf" }).end());
    expect(await threadTo(c.url).send(data(), 1)).toEqual({ id: 1, ok: true });
    expect(c.posts).toHaveLength(1);
    expect(c.posts[0]!.body).toEqual(Buffer.from(data()));
    expect(c.posts[0]!.headers["content-type"]).toBe("application/x-protobuf");
    expect(c.posts[0]!.headers.authorization).toBe("Bearer t");
  });

  it("answers a batch it cannot take (its buffer already handed over) as failed, without throwing", async () => {
    const c = await collector((_n, res) => res.writeHead(200).end());
    const thread = threadTo(c.url);
    const body = data();
    expect(await thread.send(body, 1)).toEqual({ id: 1, ok: true });
    expect(await thread.send(body, 1)).toEqual({ id: 2, ok: false, error: expect.stringMatching(/^the batch could not be handed to the span exporter: /) });
    expect(await thread.send(data(), 1)).toEqual({ id: 3, ok: true });
    expect(c.posts).toHaveLength(2);
  });

  it("retries a 503 after its Retry-After, and a 429, then delivers", async () => {
    const c = await collector((n, res) => {
      if (n === 1) res.writeHead(503, { "retry-after": "0" }).end();
      else if (n === 2) res.writeHead(429, { "retry-after": "0" }).end();
      else res.writeHead(200).end();
    });
    expect(await threadTo(c.url).send(data(), 1)).toEqual({ id: 1, ok: true });
    expect(c.posts.map((p) => p.body)).toEqual([Buffer.from(data()), Buffer.from(data()), Buffer.from(data())]);
  });

  it("does not retry a refusal: a 400 fails the export at once", async () => {
    const c = await collector((_n, res) => res.writeHead(400).end("bad spans"));
    expect(await threadTo(c.url).send(data(), 1)).toEqual({ id: 1, ok: false, error: "Bad Request" });
    expect(c.posts).toHaveLength(1);
  });

  it("gives up on a collector that does not answer within the deadline", async () => {
    const c = await collector(() => undefined);
    expect(await threadTo(c.url, 300).send(data(), 1)).toEqual({ id: 1, ok: false, error: "Request timed out" });
    expect(c.posts).toHaveLength(1);
  });

  it("fails an export to a collector that refuses connections, within the deadline", async () => {
    const c = await collector((_n, res) => res.writeHead(200).end());
    const answer = await threadTo(c.url.replace(/:\d+\//, ":1/"), 500).send(data(), 1);
    expect(answer).toEqual({ id: 1, ok: false, error: expect.stringMatching(/ECONNREFUSED|timed out/) });
  });

  it("compresses with gzip when OTEL_EXPORTER_OTLP_COMPRESSION asks for it", async () => {
    const c = await collector((_n, res) => res.writeHead(200).end());
    // The SDK reads the variable in the thread, from the environment it starts with.
    process.env.OTEL_EXPORTER_OTLP_COMPRESSION = "gzip";
    try {
      expect(await threadTo(c.url).send(data(), 1)).toEqual({ id: 1, ok: true });
    } finally {
      delete process.env.OTEL_EXPORTER_OTLP_COMPRESSION;
    }
    expect(c.posts[0]!.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(c.posts[0]!.body)).toEqual(Buffer.from(data()));
  });
});
