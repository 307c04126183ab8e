import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";
import { freePort } from "../src/db/embedded.ts";

/**
 * The usage counters in a Redis that this test owns, frozen (SIGSTOP) and then killed: a key
 * under a usage limit is served from the room its gateway process holds while that lasts (at
 * most ¾ of the lease TTL, 1 s here, after the last renewal), then gets the spec's 503 "The
 * gateway's database is unavailable" with Retry-After 5 within the documented bound (connect +
 * query timeout), never a 500 or a hang; a key without limits is served all along; and limited
 * calls are served again once Redis is back.
 */
const deadlines = { WARDEN_DB_CONNECT_TIMEOUT_MS: "500", WARDEN_DB_QUERY_TIMEOUT_MS: "1000", WARDEN_USAGE_LEASE_TTL_MS: "1000" };
/** The documented bound with these deadlines, plus a margin of 2 s for a loaded machine. */
const boundMs = 500 + 1000 + 2000;

let redis: OwnRedis;
let t: TestApp;
let fixture: GatewayFixture;
let limitedKey: string;

beforeAll(async () => {
  redis = await startOwnRedis();
  t = await startTestApp({ env: { ...deadlines, REDIS_URL: redis.url } });
  fixture = await setUpGateway(t);
  const limited = (await fixture.admin("POST", "/v1/gateway/keys", { body: { name: "limited" } })).body as { id: string; secret: string };
  await fixture.admin("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: limited.id, period: "daily", tokenLimit: 1_000_000_000 } });
  await t.app.gateway!.watcher.reload();
  limitedKey = limited.secret;
}, 60_000);

afterAll(async () => {
  await t?.stop();
  await fixture?.close();
  await redis?.destroy();
});

async function call(key: string): Promise<{ status: number; retryAfter: string | null; body: unknown; ms: number }> {
  const started = performance.now();
  const res = await fetch(`${t.gatewayUrl}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key, "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-test", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
  });
  const body: unknown = await res.json();
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body, ms: Math.round(performance.now() - started) };
}

const unavailable = {
  status: 503,
  retryAfter: "5",
  body: {
    type: "error",
    error: { type: "api_error", message: "The gateway's database is unavailable: the usage limits could not be checked in time. Retry in a few seconds." },
  },
};

async function expectRefusedInTime(): Promise<void> {
  const open = call(fixture.key);
  // Served while the process holds room for it; bounded, so a process that never stops fails.
  let limited = await call(limitedKey);
  for (const deadline = Date.now() + 15_000; limited.status === 200 && Date.now() < deadline; ) limited = await call(limitedKey);
  expect({ status: limited.status, retryAfter: limited.retryAfter, body: limited.body }).toEqual(unavailable);
  expect(limited.ms).toBeLessThan(boundMs);
  expect((await open).status).toBe(200);
}

/** Polls until a limited call is served again; bounded, so a counter store that never recovers fails. */
async function expectServedAgain(): Promise<void> {
  let last = 0;
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
    last = (await call(limitedKey)).status;
    if (last === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  expect(last).toBe(200);
}

describe("the usage counters' Redis", () => {
  it("serves limited calls while it answers", async () => {
    expect((await call(limitedKey)).status).toBe(200);
  });

  it("frozen: a limited call is refused with the database 503 in time, and served once Redis thaws", async () => {
    redis.signal("SIGSTOP");
    try {
      await expectRefusedInTime();
      // A second round, once the client has given up on the connection it had.
      await expectRefusedInTime();
    } finally {
      redis.signal("SIGCONT");
    }
    await expectServedAgain();
  });

  it("killed: a limited call is refused with the database 503 in time, and served once Redis is back", async () => {
    await redis.stop();
    await expectRefusedInTime();
    await redis.start();
    await expectServedAgain();
  });
});

interface OwnRedis {
  url: string;
  signal(signal: NodeJS.Signals): void;
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/** A redis-server of the test's own on a free loopback port, keeping nothing on disk. */
async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let server: ChildProcess | undefined;
  const start = async () => {
    const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    server = child;
    let output = "";
    await new Promise<void>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}: ${output}`)));
      child.stdout!.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("Ready to accept connections")) resolve();
      });
    });
  };
  const stop = async () => {
    const child = server;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    signal: (signal) => server?.kill(signal),
    stop,
    start,
    async destroy() {
      server?.kill("SIGCONT");
      await stop();
    },
  };
}

