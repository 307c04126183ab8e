import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGatewayHandler } from "../src/gateway/dataplane/pipeline.ts";
import { UpstreamRegistry } from "../src/gateway/dataplane/upstreams.ts";
import type { UsageStep } from "../src/gateway/limits/usage-step.ts";
import { createLogger } from "../src/platform/logger.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel } from "./support/fake-providers.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";
import { dropRedisKeys } from "./support/redis.ts";
import { setUpWaitMs, until } from "./support/wait.ts";

/**
 * A usage limit never refuses a call it has room for when calls come one after another: each
 * call's usage is settled (in its gateway process's slice) before its caller has the last byte of
 * the answer, so the next call never finds the previous reservation still held next to the usage
 * it became.
 *
 * The figures make any overlap a refusal. Each call reserves 1 (the counted "hi") + 499
 * (max_tokens) = 500 and the provider reports 4 + 6 = 10. With a limit of 900, call n finds
 * 10·n used, and 10·n + 500 ≤ 900 for every n < 40; a previous reservation still held adds 500,
 * and 1,000 > 900 refuses.
 */

const redisUrl = "redis://127.0.0.1:6379";
const calls = 40;
const limit = 900;
const model = (family: string) => fakeModel(`${family === "messages" ? "claude" : "gpt"}-seq`, { inputTokens: 4, outputTokens: 6 });

function bodyFor(endpoint: "messages" | "responses", stream: boolean): Record<string, unknown> {
  return endpoint === "messages"
    ? { model: model(endpoint), max_tokens: 499, messages: [{ role: "user", content: "hi" }], stream }
    : { model: model(endpoint), max_output_tokens: 499, input: "hi", stream };
}

async function call(baseUrl: string, secret: string, endpoint: "messages" | "responses", stream: boolean): Promise<{ status: number; text: string }> {
  const res = await fetch(`${baseUrl}/v1/${endpoint}`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify(bodyFor(endpoint, stream)),
  });
  return { status: res.status, text: await res.text() };
}

const variants = [
  { endpoint: "messages", stream: false },
  { endpoint: "messages", stream: true },
  { endpoint: "responses", stream: false },
  { endpoint: "responses", stream: true },
] as const;

describe.each(["postgres", "redis"] as const)("calls back to back, with counters in %s", (backend) => {
  const redisPrefix = `warden-test:${randomBytes(6).toString("hex")}:`;
  let t: TestApp;
  let g: GatewayFixture;

  beforeAll(async () => {
    t = await startTestApp({ env: backend === "redis" ? { REDIS_URL: redisUrl, WARDEN_REDIS_KEY_PREFIX: redisPrefix } : {} });
    g = await setUpGateway(t);
  });
  afterAll(async () => {
    await g?.close();
    await t?.stop();
    if (backend === "redis") {
      await dropRedisKeys(redisUrl, redisPrefix);
    }
  });

  it.each(variants)(`$endpoint, stream $stream: all ${calls} pass, and the usage API shows the exact total once flushed`, async ({ endpoint, stream }) => {
    const key = (await g.admin("POST", "/v1/gateway/keys", { body: { name: `${endpoint}-${stream}` } })).body as { id: string; secret: string };
    const created = await g.admin("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period: "daily", tokenLimit: limit } });
    const limitId = (created.body as { id: string }).id;
    await t.app.gateway!.watcher.reload();

    const statuses: number[] = [];
    for (let i = 0; i < calls; i++) {
      const answer = await call(t.gatewayUrl, key.secret, endpoint, stream);
      statuses.push(answer.status);
      if (answer.status === 200 && stream) expect(answer.text).toContain(endpoint === "messages" ? "event: message_stop" : "event: response.completed");
    }
    expect(statuses).toEqual(Array(calls).fill(200));
    // The slice writes its usage with its next flush, and gives its room back once idle.
    const consumption = async () => {
      const usage = await g.admin("GET", "/v1/gateway/usage/limits");
      return (usage.body as { items: { limit: { id: string }; used: number; reserved: number }[] }).items.find((i) => i.limit.id === limitId);
    };
    await until(async () => (await consumption())?.reserved === 0, "the slice to be flushed and given back", setUpWaitMs);
    expect(await consumption()).toMatchObject({ used: calls * 10, reserved: 0 });
  });
});

describe("the answer waits for its usage to be settled", () => {
  let t: TestApp;
  let g: GatewayFixture;
  let server: http.Server;
  let upstreams: UpstreamRegistry;
  let baseUrl: string;
  /** What happened, in order: each settle when it is applied, each answer once the caller has all of it. */
  const happened: string[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    g = await setUpGateway(t);
    // A usage step whose settles take a while, as a store's can: only an answer that waits for
    // them comes after them.
    const usage: UsageStep = {
      async admit() {
        return {
          async settle(spent) {
            await new Promise((resolve) => setTimeout(resolve, 100));
            happened.push(spent ? `settled ${spent.inputTokens + spent.outputTokens}` : "released");
          },
        };
      },
    };
    upstreams = new UpstreamRegistry();
    const handle = createGatewayHandler({
      watcher: t.app.gateway!.watcher,
      upstreams,
      usage,
      guardrails: {
        redactInput: () => undefined,
        checkInput: async () => undefined,
        checkOutput: async () => ({ verdict: undefined }),
        streamGuard: () => undefined,
      },
      requestLog: { record: () => undefined },
      logger: createLogger("silent"),
      defaultMaxTokens: 4096,
      maxBodyBytes: 1024 * 1024,
    });
    server = http.createServer(handle);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await upstreams?.close();
    await g?.close();
    await t?.stop();
  });

  it.each(variants)("$endpoint, stream $stream", async ({ endpoint, stream }) => {
    happened.length = 0;
    const answer = await call(baseUrl, g.key, endpoint, stream);
    happened.push(`answered ${answer.status}`);
    expect(happened).toEqual(["settled 10", "answered 200"]);
  });

  it("an error answer waits for the reservation to be released", async () => {
    happened.length = 0;
    const res = await fetch(`${baseUrl}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: fakeModel("claude-seq", { status: 500 }), max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
    });
    await res.text();
    happened.push(`answered ${res.status}`);
    expect(happened).toEqual(["released", "answered 502"]);
  });
});
