import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel, startFakeProvider, type FakeProvider } from "./support/fake-providers.ts";
import { client, type Call } from "./support/http.ts";
import { spawnWarden, type Spawned } from "./support/processes.ts";
import { setUpWaitMs, sleep, until } from "./support/wait.ts";
import { dropRedisKeys } from "./support/redis.ts";

/**
 * The usage reservations of a gateway process that is killed are released within seconds, by
 * the sweep of a process that lives on, once the dead one's lease lapses; the live process's
 * own reservations stay. So is the room of its slices (src/gateway/limits/slice.ts), which are
 * reservations under its lease too. Lease TTL here: 1 s (renewed, and swept, every 250 ms).
 */

const redisUrl = "redis://127.0.0.1:6379";
const leaseTtlMs = 1_000;
/**
 * The documented bound is the lease TTL plus one renewal interval (1.25 s here); 10 s leaves a
 * wide margin for a loaded machine, and is far below the 15 minutes of the age backstop.
 */
const releaseDeadlineMs = 10_000;

/** What both blocks start with: the app's own gateway, and a second gateway process to kill. */
interface TwoGateways {
  t: TestApp;
  admin: Call;
  provider: FakeProvider;
  /** The second gateway process, on the same database and counters. */
  doomed: Spawned;
  /** A key with a daily token limit of its own. */
  secret: string;
  limitId: string;
}

/** Started before the block's tests and stopped after them; the fields are set once they run. */
function twoGateways(backend: "postgres" | "redis", keyName: string, tokenLimit: number): TwoGateways {
  const redisPrefix = `warden-test:${randomBytes(6).toString("hex")}:`;
  const masterKey = randomBytes(32).toString("hex");
  const g = {} as Partial<TwoGateways>;

  beforeAll(async () => {
    const env: Record<string, string> = { WARDEN_MASTER_KEY: masterKey, WARDEN_USAGE_LEASE_TTL_MS: String(leaseTtlMs) };
    if (backend === "redis") Object.assign(env, { REDIS_URL: redisUrl, WARDEN_REDIS_KEY_PREFIX: redisPrefix });
    const t = (g.t = await startTestApp({ env }));
    const admin = (g.admin = client(t.baseUrl, t.adminKey));
    const provider = (g.provider = await startFakeProvider("anthropic"));
    await admin("POST", "/v1/gateway/providers", { body: { name: "anthropic", kind: "anthropic", baseUrl: provider.url, apiKey: provider.apiKey } });
    await admin("POST", "/v1/gateway/routing-rules", { body: { priority: 1, providerName: "anthropic" } });
    const key = (await admin("POST", "/v1/gateway/keys", { body: { name: keyName } })).body as { id: string; secret: string };
    g.secret = key.secret;
    const limit = await admin("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period: "daily", tokenLimit } });
    g.limitId = (limit.body as { id: string }).id;
    await t.app.gateway!.watcher.reload();
    g.doomed = await spawnWarden(
      ["gateway"],
      { ...env, DATABASE_URL: t.database.url, WARDEN_GATEWAY_PORT: "0", WARDEN_HOST: "127.0.0.1", WARDEN_LOG_LEVEL: "info", WARDEN_DATA_DIR: t.config.dataDir },
      "model gateway listening",
    );
  });

  afterAll(async () => {
    await g.doomed?.stop();
    await g.provider?.close();
    await g.t?.stop();
    if (backend === "redis") await dropRedisKeys(redisUrl, redisPrefix);
  });

  return g as TwoGateways;
}

describe.each(["postgres", "redis"] as const)("a gateway process killed while it holds reservations, counters in %s", (backend) => {
  const g = twoGateways(backend, "crash", 1_000_000);

  async function reserved(): Promise<number> {
    const res = await g.admin("GET", "/v1/gateway/usage/limits");
    const items = (res.body as { items: { limit: { id: string }; reserved: number }[] }).items;
    return Number(items.find((item) => item.limit.id === g.limitId)!.reserved);
  }

  /** A call the provider keeps for a minute: its reservation ("hi" counts 1, plus max_tokens) stays held. */
  function hold(port: number, maxTokens: number, signal: AbortSignal): Promise<unknown> {
    return fetch(`http://127.0.0.1:${port}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.secret, "content-type": "application/json" },
      body: JSON.stringify({ model: fakeModel("claude-held", { delayMs: 60_000 }), max_tokens: maxTokens, messages: [{ role: "user", content: "hi" }] }),
      signal,
    }).then((res) => res.text(), () => undefined);
  }

  it("has them released within seconds, and keeps the reservations of the process that lives", { timeout: 90_000 }, async () => {
    const live = new AbortController();
    const liveCall = hold(g.t.app.gateway!.port, 100, live.signal);
    const deadCall = hold(g.doomed.port, 200, new AbortController().signal);
    await until(async () => g.provider.requests.length === 2 && (await reserved()) === 101 + 201, "both calls to be held", setUpWaitMs);

    g.doomed.child.kill("SIGKILL");
    await once(g.doomed.child, "exit");
    await deadCall;
    await until(async () => (await reserved()) === 101, "the killed process's reservation to be released", releaseDeadlineMs);

    // Several lease periods later the live process's reservation is still held: its lease is
    // renewed. The wait is what the assertion is about, not a timing bound.
    await sleep(3 * leaseTtlMs);
    expect(await reserved()).toBe(101);
    live.abort();
    await liveCall;
    await until(async () => (await reserved()) === 0, "the live call's reservation to be released", releaseDeadlineMs);
  });
});

describe.each(["postgres", "redis"] as const)("a gateway process killed under load, holding slices, counters in %s", (backend) => {
  const tokenLimit = 20_000;
  const g = twoGateways(backend, "sliced", tokenLimit);

  async function consumption(): Promise<{ used: number; reserved: number }> {
    const res = await g.admin("GET", "/v1/gateway/usage/limits");
    const item = (res.body as { items: { limit: { id: string }; used: number; reserved: number }[] }).items.find((i) => i.limit.id === g.limitId)!;
    return { used: Number(item.used), reserved: Number(item.reserved) };
  }

  function call(port: number, maxTokens: number, model: string, signal?: AbortSignal): Promise<number> {
    return fetch(`http://127.0.0.1:${port}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.secret, "content-type": "application/json" },
      body: JSON.stringify({ model, max_tokens: maxTokens, messages: [{ role: "user", content: "hi" }] }),
      signal,
    }).then(async (res) => (await res.arrayBuffer(), res.status), () => 0);
  }

  it("has their room back within seconds: a call that needs all of it then passes", { timeout: 90_000 }, async () => {
    // Four callers one call after another, and one call the provider keeps: the process holds
    // slices for what its calls reserve, and room beyond it for the calls to come.
    let running = true;
    const quick = fakeModel("claude-quick", { inputTokens: 1, outputTokens: 9 });
    const load = Array.from({ length: 4 }, async () => {
      while (running) if ((await call(g.doomed.port, 99, quick)) !== 200) break;
    });
    void call(g.doomed.port, 500, fakeModel("claude-kept", { delayMs: 60_000 }));
    await until(async () => (await consumption()).used >= 1000 && g.provider.requests.length > 100, "the process to be busy, and to have written some usage", setUpWaitMs);

    g.doomed.child.kill("SIGKILL");
    await once(g.doomed.child, "exit");
    running = false;
    await Promise.all(load);

    // A call through the live process that needs every token no one has used ("hi" counts 1):
    // refused while the dead process's slices hold room, then served once its lease has lapsed.
    // `used` is read again before each try: the sweep that releases the slices also counts what
    // the dead process had written to PostgreSQL but not yet to Redis, a moment after.
    let status = 429;
    await until(
      async () => {
        const { used } = await consumption();
        status = await call(g.t.app.gateway!.port, tokenLimit - used - 1, fakeModel("claude-all", { inputTokens: 1, outputTokens: 1 }));
        return status !== 429;
      },
      "the dead process's room to come back",
      releaseDeadlineMs,
    );
    expect(status).toBe(200);
  });
});
