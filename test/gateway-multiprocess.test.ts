import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { startFakeProvider, type FakeProvider } from "./support/fake-providers.ts";
import { client, type Call } from "./support/http.ts";
import { spawnWarden, type Spawned } from "./support/processes.ts";

/**
 * Two gateway processes, each its own `warden gateway`, over the database of a third process that
 * serves the management API. A change made through the API must reach both: they listen to
 * PostgreSQL notifications. (How fast is measured by the benchmark, not asserted here.)
 */

const masterKey = randomBytes(32).toString("hex");
let t: TestApp;
let admin: Call;
let provider: FakeProvider;
let gateways: Spawned[] = [];
let keyId: string;
let secret: string;

beforeAll(async () => {
  t = await startTestApp({ env: { WARDEN_MASTER_KEY: masterKey } });
  admin = client(t.baseUrl, t.adminKey);
  provider = await startFakeProvider("openai");
  await admin("POST", "/v1/gateway/providers", { body: { name: "openai", kind: "openai", baseUrl: provider.url, apiKey: provider.apiKey } });
  await admin("POST", "/v1/gateway/routing-rules", { body: { priority: 1, providerName: "openai" } });
  const key = (await admin("POST", "/v1/gateway/keys", { body: { name: "shared" } })).body as { id: string; secret: string };
  keyId = key.id;
  secret = key.secret;
  const env = {
    DATABASE_URL: t.database.url,
    WARDEN_MASTER_KEY: masterKey,
    WARDEN_GATEWAY_PORT: "0",
    WARDEN_HOST: "127.0.0.1",
    WARDEN_LOG_LEVEL: "info",
    WARDEN_DATA_DIR: t.config.dataDir,
  };
  gateways = await Promise.all([0, 1].map(() => spawnWarden(["gateway"], env, "model gateway listening")));
});

afterAll(async () => {
  for (const gateway of gateways) expect(await gateway.stop()).toBe(0);
  await provider?.close();
  await t?.stop();
});

async function statusAt(gateway: Spawned, model = "gpt-shared"): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input: "hi" }),
  });
  await res.arrayBuffer();
  return res.status;
}

/** Polls every gateway until each answers `status`; bounded, so a lost notification fails the test. */
async function everyGatewayAnswers(status: number, model?: string): Promise<number[]> {
  const seen: number[] = [];
  for (const gateway of gateways) {
    let last = 0;
    for (let i = 0; i < 200 && last !== status; i++) {
      last = await statusAt(gateway, model);
      if (last !== status) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    seen.push(last);
  }
  return seen;
}

describe("configuration changes reach every gateway process", () => {
  it("serves the key on both processes", async () => {
    expect(await everyGatewayAnswers(200)).toEqual([200, 200]);
  });

  it("a disabled key is refused by both, and an enabled one served again", async () => {
    await admin("PATCH", `/v1/gateway/keys/${keyId}`, { body: { disabled: true } });
    expect(await everyGatewayAnswers(401)).toEqual([401, 401]);
    await admin("PATCH", `/v1/gateway/keys/${keyId}`, { body: { disabled: false } });
    expect(await everyGatewayAnswers(200)).toEqual([200, 200]);
  });

  it("a new block rule applies on both", async () => {
    await admin("POST", "/v1/gateway/access-rules", { body: { effect: "block", subject: "workspace", models: ["gpt-blocked"] } });
    expect(await everyGatewayAnswers(403, "gpt-blocked")).toEqual([403, 403]);
  });

  it("a key created after start works on both, and a deleted one on neither", async () => {
    const created = (await admin("POST", "/v1/gateway/keys", { body: { name: "late" } })).body as { id: string; secret: string };
    const previous = secret;
    secret = created.secret;
    expect(await everyGatewayAnswers(200)).toEqual([200, 200]);
    await admin("DELETE", `/v1/gateway/keys/${created.id}`);
    expect(await everyGatewayAnswers(401)).toEqual([401, 401]);
    secret = previous;
  });
});
