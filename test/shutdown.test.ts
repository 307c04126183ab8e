import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { fakeModel, startFakeProvider, type FakeProvider } from "./support/fake-providers.ts";
import { client } from "./support/http.ts";
import { spawnWarden } from "./support/processes.ts";

/**
 * SIGINT and SIGTERM drain: a gateway process told to stop while a stream is in flight lets it
 * finish, writes its request-log row, and only then exits.
 */

const masterKey = "c".repeat(64);
let t: TestApp;
let provider: FakeProvider;
let secret: string;
let env: Record<string, string>;

beforeAll(async () => {
  t = await startTestApp({ env: { WARDEN_MASTER_KEY: masterKey } });
  const admin = client(t.baseUrl, t.adminKey);
  provider = await startFakeProvider("openai");
  await admin("POST", "/v1/gateway/providers", { body: { name: "openai", kind: "openai", baseUrl: provider.url, apiKey: provider.apiKey } });
  await admin("POST", "/v1/gateway/routing-rules", { body: { priority: 1, providerName: "openai" } });
  secret = ((await admin("POST", "/v1/gateway/keys", { body: { name: "drain" } })).body as { secret: string }).secret;
  env = {
    DATABASE_URL: t.database.url,
    WARDEN_MASTER_KEY: masterKey,
    WARDEN_GATEWAY_PORT: "0",
    WARDEN_HOST: "127.0.0.1",
    WARDEN_LOG_LEVEL: "info",
    WARDEN_DATA_DIR: t.config.dataDir,
    WARDEN_SHUTDOWN_DRAIN_MS: "10000",
  };
});
afterAll(async () => {
  await provider?.close();
  await t?.stop();
});

describe("a gateway process told to stop", () => {
  it.each(["SIGINT", "SIGTERM"] as const)("on %s, lets a stream in flight finish and keeps its request-log row", async (signal) => {
    const gateway = await spawnWarden(["gateway"], env, "model gateway listening");
    const requestId = `drain-${signal}`;
    // The provider answers after a second: the signal arrives while the call is in flight.
    const pending = fetch(`http://127.0.0.1:${gateway.port}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "x-request-id": requestId },
      body: JSON.stringify({ model: fakeModel("gpt-slow", { delayMs: 1000 }), input: "Hi", stream: true }),
    }).then(async (res) => ({ status: res.status, text: await res.text() }));
    while (provider.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const exited = new Promise<number | null>((resolve) => gateway.child.once("exit", (code) => resolve(code)));
    gateway.child.kill(signal);
    const answer = await pending;
    expect(answer.status).toBe(200);
    expect(answer.text.endsWith('"type":"response.completed"}\n\n') || answer.text.includes("event: response.completed")).toBe(true);
    expect(await exited).toBe(0);
    const rows = await t.app.orm.em.fork().execute<{ status: number }[]>("select status from gateway_request_log where request_id = ?", [requestId]);
    expect(rows).toEqual([{ status: 200 }]);
    provider.reset();
  });
});
