/**
 * The console's files as the API port serves them under /app/: types, caching, the security
 * headers, pages that are routes of the app, and paths that must not mean anything.
 */
import http from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConsoleHandler } from "../src/console/static.ts";
import { startTestApp, type TestApp } from "./support/app.ts";

let t: TestApp;
/** The path of the console's script, as index.html names it. */
let script: string;

beforeAll(async () => {
  t = await startTestApp();
  const index = await (await fetch(`${t.baseUrl}/app/`)).text();
  script = /src="(\/app\/assets\/[^"]+\.js)"/.exec(index)![1]!;
});
afterAll(() => t?.stop());

/** A raw request, so that the path reaches the server exactly as written (fetch would normalise it). */
function raw(method: string, target: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  const { port } = new URL(t.baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path: target, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the console's files", () => {
  it("index.html: HTML, never cached without revalidation, with a strict Content-Security-Policy", async () => {
    const res = await raw("GET", "/app/");
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers["cache-control"]).toBe("no-cache");
    expect(res.headers["content-security-policy"]).toBe("default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.headers["x-frame-options"]).toBe("DENY");
    expect(res.body.toString()).toContain('<div id="root"></div>');
  });

  it("hashed assets: JavaScript, cached for a year as immutable, gzipped when asked", async () => {
    const plain = await raw("GET", script);
    expect(plain.status).toBe(200);
    expect(plain.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(plain.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    const zipped = await raw("GET", script, { "accept-encoding": "gzip, br" });
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    expect(zipped.body.length).toBeLessThan(plain.body.length);
    expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
  });

  it("answers 304 to a matching If-None-Match, and HEAD without a body", async () => {
    const first = await raw("GET", script);
    const again = await raw("GET", script, { "if-none-match": first.headers.etag! });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    const head = await raw("HEAD", script);
    expect(head.status).toBe(200);
    expect(head.headers["content-length"]).toBe(String(first.body.length));
    expect(head.body.length).toBe(0);
  });

  it("pages of the app (links.app among them) get index.html; a missing asset is 404", async () => {
    const index = (await raw("GET", "/app/")).body;
    for (const page of ["/app/projects/7b0e2b1c-0000-4000-8000-000000000000", "/app/projects/x/inference-pipelines/y?window=1", "/app/gateway/keys/"]) {
      const res = await raw("GET", page);
      expect(res.status, page).toBe(200);
      expect(res.body.equals(index), page).toBe(true);
    }
    expect((await raw("GET", "/app/assets/missing-abc123.js")).status).toBe(404);
    expect((await raw("GET", "/app/robots.txt")).status).toBe(404);
  });

  it("/app is redirected to /app/", async () => {
    const res = await raw("GET", "/app?x=1");
    expect(res.status).toBe(308);
    expect(res.headers.location).toBe("/app/?x=1");
  });

  it("answers GET and HEAD only", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const res = await raw(method, "/app/");
      expect(res.status, method).toBe(405);
      expect(res.headers.allow).toBe("GET, HEAD");
    }
  });

  it("refuses paths that climb out or are not plain names, and never serves a file from outside", async () => {
    for (const target of ["/app/../package.json", "/app/assets/../../package.json", "/app/%2e%2e/package.json", "/app/assets/%2E%2E%2F%2E%2E%2Fpackage.json", "/app/a//b", "/app/.%00", "/app/a\\..\\b", "/app/%E0%A4%A"]) {
      const res = await raw("GET", target);
      expect(res.status, target).toBe(400);
      expect(res.body.toString(), target).not.toContain('"name": "warden"');
    }
  });

  it("leaves every other path to the API", async () => {
    const res = await raw("GET", "/application");
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body.toString())).toMatchObject({ code: "not_found" });
  });
});

describe("without a build", () => {
  it("says how to make one", async () => {
    const empty = await mkdtemp(path.join(os.tmpdir(), "warden-console-"));
    try {
      const handle = await createConsoleHandler(empty);
      const server = http.createServer((req, res) => {
        if (!handle(req, res)) res.writeHead(418).end();
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const { port } = server.address() as { port: number };
      const res = await fetch(`http://127.0.0.1:${port}/app/`);
      expect(res.status).toBe(503);
      expect(await res.text()).toContain("npm run console:build");
      server.close();
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
