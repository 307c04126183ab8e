import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";

/** WARDEN_GATEWAY_SERVER_TIMING=true: every gateway answer says what the gateway's steps took. */

let t: TestApp;
let g: GatewayFixture;

beforeAll(async () => {
  t = await startTestApp({ env: { WARDEN_GATEWAY_SERVER_TIMING: "true" } });
  g = await setUpGateway(t);
  expect((await g.admin("POST", "/v1/gateway/access-rules", { body: { effect: "block", subject: "workspace", models: ["blocked-*"] } })).status).toBe(201);
  await t.app.gateway!.watcher.reload();
});
afterAll(async () => {
  await g?.close();
  await t?.stop();
});

/** The header's steps in order, and their durations. */
function steps(header: string | null): { names: string[]; durations: Record<string, number> } {
  expect(header).not.toBeNull();
  const entries = header!.split(", ").map((part) => {
    const match = /^([a-z]+);dur=(\d+\.\d\d)$/.exec(part);
    if (!match) throw new Error(`not a Server-Timing entry: ${part}`);
    return [match[1]!, Number(match[2])] as const;
  });
  return { names: entries.map(([name]) => name), durations: Object.fromEntries(entries) };
}

const call = (model: string, stream = false) =>
  fetch(`${t.gatewayUrl}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, max_tokens: 16, stream, messages: [{ role: "user", content: "Hi" }] }),
  });

describe("Server-Timing", () => {
  it("names each step of an answered call, the provider's time apart, and the gateway's own as their sum", async () => {
    const res = await call("claude-timed");
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const { names, durations } = steps(res.headers.get("server-timing"));
    expect(names).toEqual(["auth", "body", "access", "limits", "guardrails", "route", "provider", "output", "gateway"]);
    const own = names.filter((name) => name !== "provider" && name !== "gateway").reduce((sum, name) => sum + durations[name]!, 0);
    // Each figure is rounded to a hundredth of a millisecond on its own.
    expect(Math.abs(durations.gateway! - own)).toBeLessThanOrEqual(0.05);
  });

  it("on a stream, the steps up to the provider's answer (the header goes before the first event)", async () => {
    const res = await call("claude-timed", true);
    expect(res.status).toBe(200);
    await res.text();
    expect(steps(res.headers.get("server-timing")).names).toEqual(["auth", "body", "access", "limits", "guardrails", "route", "provider", "gateway"]);
  });

  it("on a refusal, the steps it got through", async () => {
    const res = await call("blocked-timed");
    expect(res.status).toBe(403);
    await res.arrayBuffer();
    expect(steps(res.headers.get("server-timing")).names).toEqual(["auth", "body", "gateway"]);
  });
});

describe("Server-Timing asked for by a key (WARDEN_GATEWAY_SERVER_TIMING off)", () => {
  let off: TestApp;
  let fixture: GatewayFixture;

  beforeAll(async () => {
    off = await startTestApp();
    fixture = await setUpGateway(off);
  });
  afterAll(async () => {
    await fixture?.close();
    await off?.stop();
  });

  const callWith = (key: string) =>
    fetch(`${off.gatewayUrl}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-timed", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }),
    });

  it("gives the header to the keys that ask for it, and only to them; the admin API sets and shows it", async () => {
    const created = await fixture.admin("POST", "/v1/gateway/keys", { body: { name: "timed", serverTiming: true } });
    expect(created.status).toBe(201);
    const timed = created.body as { id: string; secret: string; serverTiming: boolean };
    expect(timed.serverTiming).toBe(true);
    await off.app.gateway!.watcher.reload();

    const asked = await callWith(timed.secret);
    expect(asked.status).toBe(200);
    await asked.arrayBuffer();
    expect(steps(asked.headers.get("server-timing")).names).toEqual(["auth", "body", "access", "limits", "guardrails", "route", "provider", "output", "gateway"]);

    const plain = await callWith(fixture.key);
    expect(plain.status).toBe(200);
    await plain.arrayBuffer();
    expect(plain.headers.get("server-timing")).toBeNull();

    const updated = await fixture.admin("PATCH", `/v1/gateway/keys/${timed.id}`, { body: { serverTiming: false } });
    expect(updated.status).toBe(200);
    expect((updated.body as { serverTiming: boolean }).serverTiming).toBe(false);
    await off.app.gateway!.watcher.reload();
    const after = await callWith(timed.secret);
    await after.arrayBuffer();
    expect(after.headers.get("server-timing")).toBeNull();
  });
});
