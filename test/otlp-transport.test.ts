import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { CompressionAlgorithm } from "@opentelemetry/otlp-exporter-base";
import { convertLegacyHttpOptions } from "@opentelemetry/otlp-exporter-base/node-http";
import { afterEach, describe, expect, it } from "vitest";
import { OtlpHttpTransport } from "../src/platform/otlp-transport.ts";

/**
 * The span exporter's transport against collectors on loopback: what it sends, what it retries
 * (as the SDK's node:http transport does), and what ends an export.
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

function transportTo(url: string, extra: { compression?: CompressionAlgorithm } = {}): OtlpHttpTransport {
  const options = convertLegacyHttpOptions({ url, headers: { authorization: "Bearer t" }, timeoutMillis: 10_000, ...extra }, "TRACES", "v1/traces", {
    "Content-Type": "application/x-protobuf",
  });
  const transport = new OtlpHttpTransport(options);
  closers.push(async () => transport.shutdown());
  return transport;
}

const data = new Uint8Array([10, 3, 1, 2, 3]);

describe("the OTLP/HTTP transport", () => {
  it("posts the bytes as protobuf with the configured headers, and hands back the answer", async () => {
    const c = await collector((_n, res) => res.writeHead(200, { "content-type": "application/x-protobuf" }).end(Buffer.from([1, 2])));
    const result = await transportTo(c.url).send(data, 5_000);
    expect(result).toEqual({ status: "success", data: Buffer.from([1, 2]) });
    expect(c.posts).toHaveLength(1);
    expect(c.posts[0]!.body).toEqual(Buffer.from(data));
    expect(c.posts[0]!.headers["content-type"]).toBe("application/x-protobuf");
    expect(c.posts[0]!.headers.authorization).toBe("Bearer t");
  });

  it("retries a 503 after its Retry-After, and a 429, then delivers", async () => {
    const c = await collector((n, res) => {
      if (n === 1) res.writeHead(503, { "retry-after": "0" }).end();
      else if (n === 2) res.writeHead(429, { "retry-after": "0" }).end();
      else res.writeHead(200).end();
    });
    expect(await transportTo(c.url).send(data, 5_000)).toEqual({ status: "success", data: Buffer.alloc(0) });
    expect(c.posts.map((p) => p.body)).toEqual([Buffer.from(data), Buffer.from(data), Buffer.from(data)]);
  });

  it("does not retry a refusal: a 400 fails the export at once, with the collector's status", async () => {
    const c = await collector((_n, res) => res.writeHead(400).end("bad spans"));
    const result = await transportTo(c.url).send(data, 5_000);
    expect(result.status).toBe("failure");
    expect(result.status === "failure" && (result.error as Error & { code?: number }).code).toBe(400);
    expect(c.posts).toHaveLength(1);
  });

  it("gives up on a collector that does not answer within the deadline: retryable, timed out", async () => {
    const c = await collector(() => undefined);
    const result = await transportTo(c.url).send(data, 200);
    expect(result.status).toBe("retryable");
    expect(result.status === "retryable" && result.error?.message).toBe("Request timed out");
    expect(c.posts).toHaveLength(1);
  });

  it("counts a refused connection as retryable, and makes no attempt the deadline has no room for", async () => {
    const c = await collector((_n, res) => res.writeHead(200).end());
    const closed = c.url.replace(/:\d+\//, ":1/");
    const result = await transportTo(closed).send(data, 500);
    expect(result.status).toBe("retryable");
    expect(result.status === "retryable" && (result.error as Error & { code?: string }).code).toBe("ECONNREFUSED");
  });

  it("fails an export whose answer is longer than 4 MB, without reading the rest", async () => {
    const c = await collector((_n, res) => {
      res.writeHead(200);
      res.end(Buffer.alloc(5 * 1024 * 1024));
    });
    const result = await transportTo(c.url).send(data, 5_000);
    expect(result.status).toBe("failure");
    expect(result.status === "failure" && result.error.message).toMatch(/exceeded size limit of 4194304 bytes/);
  });

  it("compresses with gzip when asked to (OTEL_EXPORTER_OTLP_COMPRESSION)", async () => {
    const c = await collector((_n, res) => res.writeHead(200).end());
    expect((await transportTo(c.url, { compression: CompressionAlgorithm.GZIP }).send(data, 5_000)).status).toBe("success");
    expect(c.posts[0]!.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(c.posts[0]!.body)).toEqual(Buffer.from(data));
  });
});
