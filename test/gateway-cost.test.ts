import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { costOf, dollarsText, modelFamily, PriceBook } from "../src/gateway/cost/price-book.ts";
import { usageFrom } from "../src/gateway/usage/provider-usage.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";
import { until } from "./support/wait.ts";

/**
 * Cost: known usage at known prices. The fake providers report 11 input and 7 output tokens a
 * call, so every figure below is worked out by hand from the prices (US dollars per million tokens):
 * cost = 11 × input + 7 × output, in micro-dollars.
 */

let t: TestApp;
let g: GatewayFixture;

beforeAll(async () => {
  t = await startTestApp();
  g = await setUpGateway(t);
});
afterAll(async () => {
  await g?.close();
  await t?.stop();
});

const openai = (key: string, requestId: string) => new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: key, maxRetries: 0, defaultHeaders: { "x-request-id": requestId } });
const anthropic = (key: string, requestId: string) => new Anthropic({ baseURL: t.gatewayUrl, apiKey: key, maxRetries: 0, defaultHeaders: { "x-request-id": requestId } });

/** The request log's entry of one request, once written. */
async function logged(requestId: string): Promise<Record<string, unknown>> {
  let items: Record<string, unknown>[] = [];
  await until(
    async () => {
      items = ((await g.admin("GET", `/v1/gateway/request-log?requestId=${requestId}`)).body as { items: Record<string, unknown>[] }).items;
      return items.length === 1;
    },
    `the request-log entry of ${requestId}`,
    10_000,
  );
  return items[0]!;
}

/**
 * The key's limit as the usage API shows it once its gateway process has written its usage (every
 * 100 ms) and given back the room it held (after a flush interval without calls).
 */
async function flushed(subjectId: string): Promise<{ limit: { subjectId: string; unit: string }; used: number; reserved: number }> {
  type Item = { limit: { subjectId: string; unit: string }; used: number; reserved: number };
  let item: Item | undefined;
  await until(
    async () => {
      item = ((await g.admin("GET", "/v1/gateway/usage/limits")).body as { items: Item[] }).items.find((i) => i.limit.subjectId === subjectId);
      return item?.reserved === 0;
    },
    "the usage to be flushed",
    10_000,
  );
  return item!;
}

async function priced(body: Record<string, unknown>): Promise<{ id: string }> {
  const res = await g.admin("POST", "/v1/gateway/prices", { body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string };
}

async function newKey(name: string): Promise<{ id: string; secret: string }> {
  return (await g.admin("POST", "/v1/gateway/keys", { body: { name } })).body as { id: string; secret: string };
}

describe("the price book", () => {
  it("prices a call exactly, cached input at its own price, in pico-dollars", () => {
    // claude-sonnet-4-5: $3 input, $0.30 cached, $15 output. 1,000 input of which 400 cached, 200 output:
    // 600 × 3 + 400 × 0.3 + 200 × 15 = 1,800 + 120 + 3,000 = 4,920 micro-dollars.
    const price = new PriceBook().priceOf(undefined, "claude-sonnet-4-5-20250929")!;
    expect(dollarsText(costOf(price, { inputTokens: 1000, outputTokens: 200, cachedInputTokens: 400 }))).toBe("0.00492");
    expect(dollarsText(0n)).toBe("0");
    expect(dollarsText(1n)).toBe("0.000000000001");
    expect(dollarsText(12_345_000_000_000n)).toBe("12.345");
    expect([modelFamily("gpt-4o-2024-08-06"), modelFamily("claude-3-5-haiku-latest"), modelFamily("o3")]).toEqual(["gpt-4o", "claude-3-5-haiku", "o3"]);
  });

  it("reads cached input from either family's usage", () => {
    expect(usageFrom({ input_tokens: 100, cache_read_input_tokens: 60, cache_creation_input_tokens: 10, output_tokens: 5 })).toEqual({ inputTokens: 170, outputTokens: 5, cachedInputTokens: 60 });
    expect(usageFrom({ input_tokens: 100, input_tokens_details: { cached_tokens: 64 }, output_tokens: 5 })).toEqual({ inputTokens: 100, outputTokens: 5, cachedInputTokens: 64 });
    expect(usageFrom({ prompt_tokens: 100, prompt_tokens_details: { cached_tokens: 32 }, completion_tokens: 5 })).toEqual({ inputTokens: 100, outputTokens: 5, cachedInputTokens: 32 });
    expect(usageFrom({ input_tokens: 10, output_tokens: 5 })).toEqual({ inputTokens: 10, outputTokens: 5 });
  });

  it("takes the workspace's price for the provider, then for any provider, then the bundled one", () => {
    const micro = (usd: number) => Math.round(usd * 1e6);
    const book = new PriceBook([
      { providerName: "azure", model: "gpt-4o", price: { input: micro(1), output: micro(2), cachedInput: micro(1) } },
      { providerName: null, model: "gpt-4o", price: { input: micro(3), output: micro(4), cachedInput: micro(3) } },
    ]);
    expect(book.priceOf("azure", "gpt-4o-2024-08-06")).toEqual({ input: 1_000_000, output: 2_000_000, cachedInput: 1_000_000 });
    expect(book.priceOf("openai", "gpt-4o")).toEqual({ input: 3_000_000, output: 4_000_000, cachedInput: 3_000_000 });
    expect(book.priceOf("openai", "gpt-4o-mini")).toEqual({ input: 150_000, output: 600_000, cachedInput: 75_000 });
    expect(book.priceOf("openai", "no-such-model")).toBeUndefined();
    // Before routing: the highest of each figure over every provider's price and the any-provider one.
    const dearer = new PriceBook([
      { providerName: "azure", model: "gpt-4o", price: { input: micro(9), output: micro(2), cachedInput: micro(1) } },
      { providerName: null, model: "gpt-4o", price: { input: micro(3), output: micro(4), cachedInput: micro(3) } },
    ]);
    expect(dearer.highestPriceOf("gpt-4o-2024-08-06")).toEqual({ input: 9_000_000, output: 4_000_000, cachedInput: 3_000_000 });
    expect(dearer.highestPriceOf("gpt-4o-mini")).toEqual({ input: 150_000, output: 600_000, cachedInput: 75_000 });
    expect(dearer.highestPriceOf("no-such-model")).toBeUndefined();
  });

  it("answers the same when asked again, past the models it remembers, for each provider apart", () => {
    const micro = (usd: number) => Math.round(usd * 1e6);
    const azure = { input: micro(1), output: micro(2), cachedInput: micro(1) };
    const book = new PriceBook([{ providerName: "azure", model: "gpt-4o", price: azure }]);
    const mini = { input: 150_000, output: 600_000, cachedInput: 75_000 };
    for (let round = 0; round < 3; round++) {
      expect(book.priceOf("azure", "gpt-4o")).toEqual(azure);
      expect(book.priceOf("openai", "gpt-4o")).toEqual({ input: 2_500_000, output: 10_000_000, cachedInput: 1_250_000 });
      expect(book.priceOf(undefined, "gpt-4o-mini")).toEqual(mini);
      expect(book.priceOf("azure", "no-such-model")).toBeUndefined();
      // 1,100 unknown models, as callers may send: more than a provider's memo holds (1,024).
      for (let i = 0; i < 1_100; i++) expect(book.priceOf("azure", `unknown-${round}-${i}`)).toBeUndefined();
    }
  });
});

describe("the cost of gateway calls", () => {
  it("is in the request log: bundled, overridden per provider, per model on any provider, and unknown", async () => {
    // gpt-4o-mini, bundled: $0.15 / $0.60 → 11 × 0.15 + 7 × 0.6 = 5.85 micro-dollars.
    await openai(g.key, "cost-bundled").responses.create({ model: "gpt-4o-mini", input: "Hi" });
    expect(await logged("cost-bundled")).toMatchObject({ model: "gpt-4o-mini", provider: "openai", inputTokens: 11, outputTokens: 7, cachedInputTokens: 0, costUsd: 0.00000585 });

    // On the provider "openai" only: $1 / $2 → 11 + 14 = 25 micro-dollars.
    await priced({ providerName: "openai", model: "gpt-4o-mini", inputPerMillion: 1, outputPerMillion: 2 });
    // On any provider, for a dated release of a family: $3 / $15 → 33 + 105 = 138 micro-dollars.
    await priced({ model: "claude-costed", inputPerMillion: 3, outputPerMillion: 15, cachedInputPerMillion: 0.3 });
    await t.app.gateway!.watcher.reload();
    await openai(g.key, "cost-override").responses.create({ model: "gpt-4o-mini", input: "Hi" });
    await anthropic(g.key, "cost-family").messages.create({ model: "claude-costed-20250101", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] });
    await openai(g.key, "cost-unknown").responses.create({ model: "mystery-model", input: "Hi" });
    expect(await logged("cost-override")).toMatchObject({ costUsd: 0.000025 });
    expect(await logged("cost-family")).toMatchObject({ provider: "anthropic", costUsd: 0.000138 });
    expect(await logged("cost-unknown")).toMatchObject({ inputTokens: 11, costUsd: null });
  });

  it("is in the usage API with names, by key and by model, in hourly and daily buckets", async () => {
    const key = await newKey("costly");
    // $1 / $2 on any provider: 11 + 14 = 25 micro-dollars a call.
    await priced({ model: "gpt-usage", inputPerMillion: 1, outputPerMillion: 2 });
    await t.app.gateway!.watcher.reload();
    await openai(key.secret, "usage-1").responses.create({ model: "gpt-usage", input: "Hi" });
    await openai(key.secret, "usage-2").responses.create({ model: "gpt-usage", input: "Hi" });
    await openai(key.secret, "usage-3").responses.create({ model: "mystery-model", input: "Hi" });
    await logged("usage-3");
    await Promise.all(["usage-1", "usage-2"].map(logged));

    const byKey = (await g.admin("GET", "/v1/gateway/usage?groupBy=key")).body as { items: Record<string, unknown>[] };
    // Two calls at 25 micro-dollars each; the third has no price.
    expect(byKey.items.find((row) => row.subject === key.id)).toEqual({
      subject: key.id,
      name: "costly",
      requests: 3,
      inputTokens: 33,
      outputTokens: 21,
      totalTokens: 54,
      cachedInputTokens: 0,
      costUsd: 0.00005,
      unpricedRequests: 1,
      estimatedRequests: 0,
      bucketStart: null,
    });

    const hourly = (await g.admin("GET", "/v1/gateway/usage?groupBy=model&bucket=hour")).body as { bucket: string; items: Record<string, unknown>[] };
    expect(hourly.bucket).toBe("hour");
    const hour = new Date();
    hour.setUTCMinutes(0, 0, 0);
    const rows = hourly.items.filter((row) => row.subject === "gpt-usage");
    // The two calls, in this hour (or, past a turn of the hour, split across two).
    expect(rows.reduce((sum, row) => sum + (row.requests as number), 0)).toBe(2);
    for (const row of rows) {
      expect(row.name).toBe("gpt-usage");
      expect(new Date(row.bucketStart as string).getUTCMinutes()).toBe(0);
    }
    expect(hourly.items.some((row) => row.bucketStart === hour.toISOString())).toBe(true);
    expect(rows.reduce((sum, row) => sum + Math.round((row.costUsd as number) * 1e6), 0)).toBe(50);

    const daily = (await g.admin("GET", "/v1/gateway/usage?groupBy=model&bucket=day")).body as { items: Record<string, unknown>[] };
    for (const row of daily.items) expect((row.bucketStart as string).endsWith("T00:00:00.000Z")).toBe(true);
  });

  it("is on /metrics, by provider and model", async () => {
    const text = await (await fetch(`${t.gatewayUrl}/metrics`)).text();
    expect(text).toContain('warden_gateway_cost_usd_total{provider="anthropic",model="claude-costed-20250101"} 0.000138\n');
  });
});

describe("limits in dollars and in requests", () => {
  it("a dollar limit refuses once the calls' cost has reached it, with the spec's message", async () => {
    const key = await newKey("budget");
    // gpt-4o-mini on openai at $1 / $2. Each call reserves its worst case at the highest price the
    // model has (openai's): 1 input token estimated + 16 output = 1 + 32 = 33 micro-dollars, and
    // settles 25. With $0.000058 a day, the second call fits (25 + 33 = 58), the third cannot (50 + 33).
    expect((await g.admin("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period: "daily", costLimitUsd: 0.000058 } })).status).toBe(201);
    await t.app.gateway!.watcher.reload();
    const client = openai(key.secret, "budget");
    await client.responses.create({ model: "gpt-4o-mini", input: "Hi", max_output_tokens: 16 });
    await client.responses.create({ model: "gpt-4o-mini", input: "Hi", max_output_tokens: 16 });
    const refused = await fetch(`${t.gatewayUrl}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", input: "Hi", max_output_tokens: 16 }),
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBeNull();
    expect(await refused.json()).toEqual({
      error: { message: "You've reached the daily limit. Your limit will reset tomorrow. If this is unexpected, contact your administrator.", type: "rate_limit_error", param: null, code: null },
    });
    expect(await flushed(key.id)).toMatchObject({ limit: { unit: "usd" }, used: 50, reserved: 0 });
  });

  it("a request limit refuses the call past it", async () => {
    const key = await newKey("counted");
    expect((await g.admin("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period: "all_time", requestLimit: 2 } })).status).toBe(201);
    await t.app.gateway!.watcher.reload();
    const client = anthropic(key.secret, "counted");
    for (let i = 0; i < 2; i++) await client.messages.create({ model: "claude-x", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] });
    await expect(client.messages.create({ model: "claude-x", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] })).rejects.toMatchObject({
      status: 429,
      error: { type: "error", error: { type: "rate_limit_error", message: "You've reached your usage limit. If this is unexpected, contact your administrator." } },
    });
  });

  it("a dollar limit holds under concurrency: calls at once never spend past it", async () => {
    const key = await newKey("concurrent");
    // claude-costed at $3 / $15 on any provider. Each call reserves its worst case, its input
    // estimate (1 token for "Hi") and max_tokens 16: 3 + 240 = 243 micro-dollars; it settles its
    // cost, 11 × 3 + 7 × 15 = 138. A limit of 1,000 admits 4 at once, and 7 in all at most.
    expect((await g.admin("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period: "daily", costLimitUsd: 0.001 } })).status).toBe(201);
    await t.app.gateway!.watcher.reload();
    const statuses = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${t.gatewayUrl}/v1/messages`, {
          method: "POST",
          headers: { "x-api-key": key.secret, "content-type": "application/json" },
          body: JSON.stringify({ model: "claude-costed", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }),
        }).then(async (res) => (await res.arrayBuffer(), res.status)),
      ),
    );
    const admitted = statuses.filter((status) => status === 200).length;
    expect(statuses.every((status) => status === 200 || status === 429)).toBe(true);
    expect(admitted).toBeGreaterThanOrEqual(4);
    expect(admitted).toBeLessThanOrEqual(7);
    const spent = await flushed(key.id);
    expect(spent).toMatchObject({ used: admitted * 138, reserved: 0 });
    expect(spent.used).toBeLessThanOrEqual(1000);
  });
});
