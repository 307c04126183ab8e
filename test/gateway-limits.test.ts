import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayError } from "../src/gateway/dataplane/errors.ts";
import { endpointSpecs } from "../src/gateway/endpoints/specs.ts";
import { createLimitStep } from "../src/gateway/limits/limit-step.ts";
import { PgCounterStore } from "../src/gateway/limits/pg-store.ts";
import { Slices } from "../src/gateway/limits/slices.ts";
import type { GatewayKey, WorkspaceConfig } from "../src/gateway/config/types.ts";
import { createLogger } from "../src/platform/logger.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel, startFakeProvider, type FakeProvider } from "./support/fake-providers.ts";
import { client, type Call } from "./support/http.ts";
import { spawnWarden, type Spawned } from "./support/processes.ts";
import { dropRedisKeys } from "./support/redis.ts";
import { setUpWaitMs, until } from "./support/wait.ts";

/**
 * Usage limits through the gateway. The race: three gateway processes on one database fire 300
 * requests at a daily limit that fits exactly k of them. Each request reserves its counted input
 * ("hi": 1 token) plus max_tokens (99), and the provider reports exactly that, so no settle frees
 * budget mid-race. Exactly k pass; the rest get the daily 429; recorded usage is k × 100.
 */

const redisUrl = "redis://127.0.0.1:6379";
const k = 40;
const perRequest = 100;

interface Setup {
  t: TestApp;
  admin: Call;
  provider: FakeProvider;
  gateways: Spawned[];
  key: { id: string; secret: string };
  limitId: string;
  /** A key with a user and a group: `requestsK` requests a day on the key, and token and request limits on its user and group that it never reaches. */
  counted: { secret: string; keyLimitId: string; userLimitId: string; groupLimitId: string };
  close(): Promise<void>;
}

const requestsK = 25;

async function setUp(backend: "postgres" | "redis"): Promise<Setup> {
  const masterKey = randomBytes(32).toString("hex");
  const redisPrefix = `warden-test:${randomBytes(6).toString("hex")}:`;
  const env: Record<string, string> = { WARDEN_MASTER_KEY: masterKey };
  if (backend === "redis") Object.assign(env, { REDIS_URL: redisUrl, WARDEN_REDIS_KEY_PREFIX: redisPrefix });
  const t = await startTestApp({ env });
  const admin = client(t.baseUrl, t.adminKey);
  const provider = await startFakeProvider("anthropic");
  await admin("POST", "/v1/gateway/providers", { body: { name: "anthropic", kind: "anthropic", baseUrl: provider.url, apiKey: provider.apiKey } });
  await admin("POST", "/v1/gateway/routing-rules", { body: { priority: 1, providerName: "anthropic" } });
  const key = (await admin("POST", "/v1/gateway/keys", { body: { name: "raced" } })).body as { id: string; secret: string };
  const limit = (await admin("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period: "daily", tokenLimit: k * perRequest } })).body as { id: string };
  const user = (await admin("POST", "/v1/gateway/users", { body: { name: "counted" } })).body as { id: string };
  const group = (await admin("POST", "/v1/gateway/groups", { body: { name: "counted" } })).body as { id: string };
  const countedKey = (await admin("POST", "/v1/gateway/keys", { body: { name: "counted", userId: user.id, groupIds: [group.id] } })).body as { id: string; secret: string };
  const limitOf = async (body: Record<string, unknown>) => ((await admin("POST", "/v1/gateway/usage-limits", { body })).body as { id: string }).id;
  const counted = {
    secret: countedKey.secret,
    keyLimitId: await limitOf({ scope: "key", subjectId: countedKey.id, period: "daily", requestLimit: requestsK }),
    userLimitId: await limitOf({ scope: "user", subjectId: user.id, period: "monthly", tokenLimit: 1_000_000 }),
    groupLimitId: await limitOf({ scope: "group", subjectId: group.id, period: "weekly", requestLimit: 1000 }),
  };
  const gateways = await Promise.all(
    [0, 1, 2].map(() =>
      spawnWarden(["gateway"], { ...env, DATABASE_URL: t.database.url, WARDEN_GATEWAY_PORT: "0", WARDEN_HOST: "127.0.0.1", WARDEN_LOG_LEVEL: "info", WARDEN_DATA_DIR: t.config.dataDir }, "model gateway listening"),
    ),
  );
  return {
    t,
    admin,
    provider,
    gateways,
    key,
    limitId: limit.id,
    counted,
    async close() {
      for (const gateway of gateways) await gateway.stop();
      await provider.close();
      await t.stop();
      if (backend === "redis") {
        await dropRedisKeys(redisUrl, redisPrefix);
      }
    },
  };
}

function ask(port: number, secret: string, model: string, extra: Record<string, unknown> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": secret, "content-type": "application/json" },
    body: JSON.stringify({ model, max_tokens: perRequest - 1, messages: [{ role: "user", content: "hi" }], ...extra }),
    signal,
  });
}

async function consumption(admin: Call, limitId: string): Promise<{ used: number; reserved: number }> {
  const res = await admin("GET", "/v1/gateway/usage/limits");
  const item = (res.body as { items: { limit: { id: string }; used: number; reserved: number }[] }).items.find((i) => i.limit.id === limitId)!;
  return { used: item.used, reserved: item.reserved };
}

/**
 * A request's usage is settled in its gateway process before its caller has the whole answer, and
 * written to the counters with the process's next flush (every 100 ms), when the room the process
 * held for its calls also goes back: wait (boundedly) until nothing is reserved any more. Usage
 * and reservations move together in the store, so the usage read then is complete.
 */
async function settled(admin: Call, limitId: string): Promise<{ used: number; reserved: number }> {
  let last = await consumption(admin, limitId);
  for (let i = 0; i < 200 && last.reserved > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    last = await consumption(admin, limitId);
  }
  return last;
}

const daily = {
  type: "error",
  error: { type: "rate_limit_error", message: "You've reached the daily limit. Your limit will reset tomorrow. If this is unexpected, contact your administrator." },
};

describe.each(["postgres", "redis"] as const)("the race, with counters in %s", (backend) => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp(backend);
  });
  afterAll(() => s?.close());

  it(`lets exactly ${k} of 300 concurrent requests through three processes, and records their usage`, async () => {
    const model = fakeModel("claude-race", { inputTokens: 1, outputTokens: perRequest - 1, delayMs: 50 });
    const responses = await Promise.all(
      Array.from({ length: 300 }, (_, i) => ask(s.gateways[i % 3]!.port, s.key.secret, model).then(async (res) => ({ status: res.status, body: await res.json(), retryAfter: res.headers.get("retry-after") }))),
    );
    const ok = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status === 429);
    expect(ok).toHaveLength(k);
    expect(refused).toHaveLength(300 - k);
    for (const r of refused) {
      expect(r.body).toEqual(daily);
      expect(r.retryAfter).toBeNull();
    }
    expect(s.provider.requests).toHaveLength(k);
    expect(await settled(s.admin, s.limitId)).toEqual({ used: k * perRequest, reserved: 0 });
  });

  it(`lets exactly ${requestsK} of 200 concurrent requests through under a request limit, with token and request limits on the user and the group`, async () => {
    const model = fakeModel("claude-race-requests", { inputTokens: 1, outputTokens: perRequest - 1, delayMs: 50 });
    const statuses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => ask(s.gateways[i % 3]!.port, s.counted.secret, model).then(async (res) => (await res.arrayBuffer(), res.status))),
    );
    expect(statuses.filter((status) => status !== 200 && status !== 429)).toEqual([]);
    expect(statuses.filter((status) => status === 200)).toHaveLength(requestsK);
    expect(statuses.filter((status) => status === 429)).toHaveLength(200 - requestsK);
    expect(await settled(s.admin, s.counted.keyLimitId)).toEqual({ used: requestsK, reserved: 0 });
    expect(await settled(s.admin, s.counted.groupLimitId)).toEqual({ used: requestsK, reserved: 0 });
    expect(await settled(s.admin, s.counted.userLimitId)).toEqual({ used: requestsK * perRequest, reserved: 0 });
  });
});

describe.each(["postgres", "redis"] as const)("room one process holds, and room no process holds, with counters in %s", (backend) => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp(backend);
  });
  afterAll(() => s?.close());

  it("refuses no call while the budget has room that no process holds, and serves the held room once it comes back", async () => {
    const [holder, caller] = [s.gateways[0]!, s.gateways[1]!];
    // The holder keeps 10 calls of 100 in flight: the provider answers them in a minute.
    const abort = new AbortController();
    const heldCalls = Array.from({ length: 10 }, () => ask(holder.port, s.key.secret, fakeModel("claude-held", { delayMs: 60_000 }), {}, abort.signal).then((r) => r.text(), () => undefined));
    // Once it has given back any room beyond its calls (idle slices do, within two flushes), it holds 1,000 of 4,000.
    await until(async () => s.provider.requests.length === 10 && (await consumption(s.admin, s.limitId)).reserved === 1000, "the held calls to hold 1,000", setUpWaitMs);
    // One call after another through another process: each has room that no process holds, up to 3,000.
    const model = fakeModel("claude-unheld", { inputTokens: 1, outputTokens: perRequest - 1 });
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push(await ask(caller.port, s.key.secret, model).then(async (res) => (await res.arrayBuffer(), res.status)));
    expect(statuses).toEqual(Array(30).fill(200));
    const refused = await ask(caller.port, s.key.secret, model);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual(daily);
    // The held calls end without usage; their room comes back, and the caller gets it.
    abort.abort();
    await Promise.all(heldCalls);
    let last = 429;
    for (let i = 0; i < 400 && last === 429; i++) {
      last = await ask(caller.port, s.key.secret, model).then(async (res) => (await res.arrayBuffer(), res.status));
      if (last === 429) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(last).toBe(200);
  });
});

describe("what counts", () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp("postgres");
    await s.admin("POST", "/v1/gateway/guardrails", { body: { kind: "pii", stage: "output" } });
  });
  afterAll(() => s?.close());

  const port = () => s.gateways[0]!.port;

  it("a streamed answer counts its usage events; an upstream error counts nothing", async () => {
    const before = await settled(s.admin, s.limitId);
    const streamed = await ask(port(), s.key.secret, fakeModel("claude-s", { inputTokens: 5, outputTokens: 6 }), { stream: true });
    await streamed.text();
    expect(await settled(s.admin, s.limitId)).toEqual({ used: before.used + 11, reserved: 0 });
    const failed = await ask(port(), s.key.secret, fakeModel("claude-f", { status: 500 }));
    expect(failed.status).toBe(502);
    expect(await settled(s.admin, s.limitId)).toEqual({ used: before.used + 11, reserved: 0 });
  });

  it("an answer blocked on output counts", async () => {
    // The gateway processes pick up the guardrail through NOTIFY: wait until it blocks.
    let res = await ask(port(), s.key.secret, fakeModel("claude-b", { text: "Card 4111 1111 1111 1111", inputTokens: 3, outputTokens: 4 }));
    for (let i = 0; i < 100 && res.status !== 422; i++) {
      await res.text();
      await new Promise((resolve) => setTimeout(resolve, 20));
      res = await ask(port(), s.key.secret, fakeModel("claude-b", { text: "Card 4111 1111 1111 1111", inputTokens: 3, outputTokens: 4 }));
    }
    expect(res.status).toBe(422);
    const before = await settled(s.admin, s.limitId);
    const again = await ask(port(), s.key.secret, fakeModel("claude-b", { text: "Card 4111 1111 1111 1111", inputTokens: 3, outputTokens: 4 }));
    expect(again.status).toBe(422);
    expect(await settled(s.admin, s.limitId)).toEqual({ used: before.used + 7, reserved: 0 });
  });

  it("an abandoned stream counts what the provider reported", async () => {
    const before = await settled(s.admin, s.limitId);
    const abort = new AbortController();
    const res = await ask(port(), s.key.secret, fakeModel("claude-a", { stallAfter: 2, inputTokens: 9 }), { stream: true }, abort.signal);
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    await reader.read().catch(() => undefined);
    // message_start reported 9 input tokens and 1 output token so far.
    let after = await settled(s.admin, s.limitId);
    for (let i = 0; i < 100 && after.used === before.used; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      after = await settled(s.admin, s.limitId);
    }
    expect(after.used).toBe(before.used + 10);
  });
});

describe("a killed gateway process", () => {
  it("loses at most the usage it had not flushed, and what it wrote is whole", async () => {
    const s = await setUp("postgres");
    try {
      const gateway = s.gateways[0]!;
      const model = fakeModel("claude-k", { inputTokens: 2, outputTokens: 3, delayMs: 100 });
      const inFlight = Array.from({ length: 60 }, () => ask(gateway.port, s.key.secret, model).then((r) => r.status, () => 0));
      // Kill it mid-load: once some usage is written, while other requests are still in flight.
      const written = async () =>
        Number((await s.t.app.orm.em.fork().execute<{ n: string }[]>("select coalesce(sum(tokens), 0) as n from usage_reservation where state = 'settled'"))[0]!.n);
      for (let i = 0; i < 400 && (await written()) === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      gateway.child.kill("SIGKILL");
      const statuses = await Promise.all(inFlight);
      // What was written is in PostgreSQL, transactionally: the counter agrees with the settled
      // reservations, and counts whole calls (5 tokens each), no more than were answered.
      const rows = await s.t.app.orm.em.fork().execute<{ used: string; settled: string | null; finished: number }[]>(
        `select (select coalesce(sum(used), 0) from usage_counter where limit_id = ?) as used,
                (select sum(tokens) from usage_reservation where state = 'settled' and ? = any(limit_ids)) as settled,
                (select count(*)::int from usage_reservation where state = 'settled' and ? = any(limit_ids)) as finished`,
        [s.limitId, s.limitId, s.limitId],
      );
      const used = Number(rows[0]!.used);
      expect(rows[0]!.finished).toBeGreaterThan(0);
      expect(used).toBe(Number(rows[0]!.settled));
      expect(used % 5).toBe(0);
      expect(used).toBeGreaterThan(0);
      expect(used).toBeLessThanOrEqual(5 * statuses.filter((status) => status === 200).length);
    } finally {
      await s.close();
    }
  });
});

describe("the 429 messages, with an injected clock", () => {
  it("names tomorrow, the next Monday, the first of next month, or never", async () => {
    const wednesday = new Date("2026-11-18T15:00:00Z");
    const t = await startTestApp();
    const admin = client(t.baseUrl, t.adminKey);
    const store = new PgCounterStore({ databaseUrl: t.database.url });
    try {
      const created = (await admin("POST", "/v1/gateway/keys", { body: {} })).body as { id: string };
      const [{ id: workspaceId }] = await t.app.orm.em.fork().execute<{ id: string }[]>("select id from workspace");
      const key: GatewayKey = { id: created.id, workspaceId, name: null, userId: null, groupIds: [], disabled: false, allowedModels: null };
      const expectations = [
        ["daily", "You've reached the daily limit. Your limit will reset tomorrow."],
        ["weekly", "You've reached the weekly limit. Your limit will reset on 2026-11-23."],
        ["monthly", "You've reached the monthly limit. Your limit will reset on 2026-12-01."],
        ["all_time", "You've reached your usage limit."],
      ] as const;
      for (const [period, message] of expectations) {
        const limit = (await admin("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period, tokenLimit: 10 } })).body as { id: string };
        const config = { usageLimits: [{ id: limit.id, workspaceId, scope: "key", subjectId: key.id, period, unit: "tokens", tokenLimit: 10 }] } as unknown as WorkspaceConfig;
        const slices = new Slices(store, createLogger("silent"), { leaseTtlMs: 60_000, intervalMs: 0 });
        slices.leaseRenewed(performance.now());
        const step = createLimitStep({ slices, defaultMaxTokens: 8, now: () => wednesday });
        // "hi" counts 1 token, plus max_tokens 8: the first reserves 9 of 10, the second cannot fit.
        const body = { messages: [{ role: "user", content: "hi" }], max_tokens: 8 };
        await step.admit({ key, config, spec: endpointSpecs.messages, body });
        const refused = await (async () => step.admit({ key, config, spec: endpointSpecs.messages, body }))().then(() => undefined, (e: unknown) => e);
        expect(refused).toBeInstanceOf(GatewayError);
        expect((refused as GatewayError).status).toBe(429);
        expect((refused as GatewayError).message).toBe(`${message} If this is unexpected, contact your administrator.`);
        expect((refused as GatewayError).retryAfter).toBeUndefined();
        await admin("DELETE", `/v1/gateway/usage-limits/${limit.id}`);
      }
    } finally {
      await store.close();
      await t.stop();
    }
  });
});
