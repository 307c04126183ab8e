import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel, startFakeProvider, type FakeProvider } from "./support/fake-providers.ts";
import { client, type Call } from "./support/http.ts";

/**
 * Routing rules with several targets: a call moves to the next target when one fails before any
 * byte reached the caller, a target that answered 429 cools down for its Retry-After, and weights
 * spread calls. The primary and the backup are two fake OpenAI providers; what each does is chosen
 * by the upstream model its target sends (the fakes read directives from the model name).
 */

let t: TestApp;
let admin: Call;
let primary: FakeProvider;
let backup: FakeProvider;
let key: string;
let priority = 0;

beforeAll(async () => {
  t = await startTestApp();
  admin = client(t.baseUrl, t.adminKey);
  [primary, backup] = await Promise.all([startFakeProvider("openai"), startFakeProvider("openai")]);
  const made = await admin("POST", "/v1/gateway/keys", { body: { name: "fallbacks" } });
  key = (made.body as { secret: string }).secret;
});
afterAll(async () => {
  await Promise.all([primary?.close(), backup?.close()]);
  await t?.stop();
});

/**
 * A rule for `model` whose targets send these upstream models to the primary, then the backup.
 * Each rule gets providers of its own (over the same two fakes): cooldown is per provider, and
 * must not carry from one test to the next.
 */
async function route(model: string, targets: { provider: "primary" | "backup"; upstream: string; weight?: number }[]): Promise<void> {
  priority += 1;
  for (const [name, fake] of [["primary", primary], ["backup", backup]] as const) {
    const body = { name: `${name}-${priority}`, kind: "openai", baseUrl: fake.url, apiKey: fake.apiKey, headersTimeoutMs: 300 };
    const res = await admin("POST", "/v1/gateway/providers", { body });
    expect(res.status, res.text).toBe(201);
  }
  const targetsOf = targets.map((x) => ({ providerName: `${x.provider}-${priority}`, upstreamModel: x.upstream, weight: x.weight }));
  const body = { priority, models: [model], targets: targetsOf };
  const res = await admin("POST", "/v1/gateway/routing-rules", { body });
  expect(res.status, res.text).toBe(201);
  await t.app.gateway!.watcher.reload();
  primary.reset();
  backup.reset();
}

function ask(model: string, requestId: string, stream = false): Promise<Response> {
  return fetch(`${t.gatewayUrl}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-request-id": requestId },
    body: JSON.stringify({ model, input: "Hi", stream }),
  });
}

/** The request log's rows of a request, providers named without their rule's number. */
async function logged(requestId: string): Promise<{ provider: string; status: number; superseded: boolean }[]> {
  await t.app.gateway!.requestLog.flush();
  const rows = await t.app.orm.em.fork().execute<{ provider: string; status: number; superseded: boolean }[]>(
    "select provider, status, superseded from gateway_request_log where request_id = ? order by id",
    [requestId],
  );
  return rows.map((row) => ({ ...row, provider: row.provider.replace(/-\d+$/, "") }));
}

describe("a call moves to the next target", () => {
  it.each([
    ["a 5xx", fakeModel("gpt-a", { status: 500, message: "down" }), 502],
    ["a 429", fakeModel("gpt-b", { status: 429, message: "slow down" }), 429],
    ["a connection failure", fakeModel("gpt-c", { hangUp: true }), 502],
    ["a timeout", fakeModel("gpt-d", { delayMs: 2000 }), 504],
  ] as const)("after %s of the first, the second answers, and both attempts are logged", async (what, failing, status) => {
    const model = `fallback-${what.replaceAll(" ", "-")}`;
    await route(model, [{ provider: "primary", upstream: failing }, { provider: "backup", upstream: "gpt-ok" }]);
    const res = await ask(model, `fb-${model}`);
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { model: string; output: { content: { text: string }[] }[] };
    expect(answer.model).toBe("gpt-ok");
    expect(answer.output[0]!.content[0]!.text).toBe("Hello from openai");
    expect(primary.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(1);
    expect(await logged(`fb-${model}`)).toEqual([
      { provider: "primary", status, superseded: true },
      { provider: "backup", status: 200, superseded: false },
    ]);
  });

  it("does not move on after an error the next provider would give too (400)", async () => {
    await route("fallback-400", [{ provider: "primary", upstream: fakeModel("gpt-e", { status: 400, message: "bad request" }) }, { provider: "backup", upstream: "gpt-ok" }]);
    const res = await ask("fallback-400", "fb-400");
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { message: "bad request", type: "invalid_request_error", param: null, code: null } });
    expect(backup.requests).toHaveLength(0);
  });

  it("answers the last failure when every target fails", async () => {
    await route("fallback-all", [
      { provider: "primary", upstream: fakeModel("gpt-f", { status: 500, message: "first down" }) },
      { provider: "backup", upstream: fakeModel("gpt-g", { status: 503, message: "second down" }) },
    ]);
    const res = await ask("fallback-all", "fb-all");
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ error: { message: "second down", type: "api_error", param: null, code: null } });
    expect(await logged("fb-all")).toEqual([
      { provider: "primary", status: 502, superseded: true },
      { provider: "backup", status: 502, superseded: false },
    ]);
  });

  it("a stream that breaks before its first event moves on too: nothing had reached the caller", async () => {
    await route("fallback-stream-early", [{ provider: "primary", upstream: fakeModel("gpt-j", { cutAfter: 0 }) }, { provider: "backup", upstream: "gpt-ok" }]);
    const openai = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: key, maxRetries: 0 });
    const final = await openai.responses.stream({ model: "fallback-stream-early", input: "Hi" }).finalResponse();
    expect(final.output_text).toBe("Hello from openai");
    expect(final.model).toBe("gpt-ok");
    expect([primary.requests.length, backup.requests.length]).toEqual([1, 1]);
  });

  it("never after the first byte: a stream cut mid-way ends with the error event, and the backup is not called", async () => {
    await route("fallback-stream", [{ provider: "primary", upstream: fakeModel("gpt-h", { cutAfter: 3 }) }, { provider: "backup", upstream: "gpt-ok" }]);
    const openai = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: key, maxRetries: 0 });
    const stream = await openai.responses.create({ model: "fallback-stream", input: "Hi", stream: true });
    const types: string[] = [];
    const failed = await (async () => {
      for await (const event of stream) types.push(event.type);
    })().catch((err: unknown) => err);
    expect(types).toEqual(["response.created", "response.in_progress", "response.output_item.added"]);
    expect(failed).toBeInstanceOf(OpenAI.APIError);
    expect((failed as InstanceType<typeof OpenAI.APIError>).message).toContain("The provider closed the connection before its response was complete.");
    expect(backup.requests).toHaveLength(0);
  });
});

describe("cooldown", () => {
  it("skips a target that answered 429 with Retry-After until then", async () => {
    await route("cooldown-429", [{ provider: "primary", upstream: fakeModel("gpt-i", { status: 429, retryAfter: 60 }) }, { provider: "backup", upstream: "gpt-ok" }]);
    expect((await ask("cooldown-429", "cd-1")).status).toBe(200);
    expect((await ask("cooldown-429", "cd-2")).status).toBe(200);
    expect((await ask("cooldown-429", "cd-3")).status).toBe(200);
    // Only the first call tried the primary: the others skipped it while it cools down.
    expect(primary.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(3);
  });
});

describe("weights", () => {
  it("spread 10,000 calls within 2% of an 80/20 split", async () => {
    await route("weighted", [{ provider: "primary", upstream: "gpt-ok", weight: 80 }, { provider: "backup", upstream: "gpt-ok", weight: 20 }]);
    const calls = 10_000;
    let next = 0;
    // 32 callers at a time; each call goes to exactly one of the two.
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (next < calls) {
        next += 1;
        const res = await ask("weighted", `w-${next}`);
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
    }));
    expect(primary.requests.length + backup.requests.length).toBe(calls);
    // The share's standard deviation is 0.4 points: 2 points is five of them (a miss about once in 3.5 million runs).
    expect(Math.abs(primary.requests.length / calls - 0.8)).toBeLessThan(0.02);
  }, 120_000);
});
