import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
  await t.app.gateway!.detectors.ready;
});
afterAll(() => t?.stop());

describe("operations endpoints", () => {
  it("the API answers /healthz, /readyz and /metrics without a key", async () => {
    const health = await fetch(`${t.baseUrl}/healthz`);
    expect({ status: health.status, body: await health.json() }).toEqual({ status: 200, body: { status: "ok" } });
    const ready = await fetch(`${t.baseUrl}/readyz`);
    expect({ status: ready.status, body: await ready.json() }).toEqual({ status: 200, body: { status: "ready" } });
    const metrics = await fetch(`${t.baseUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("content-type")).toContain("text/plain");
    expect(await metrics.text()).toContain("process_resident_memory_bytes");
  });

  it("the gateway answers /healthz, and /readyz once its detectors are loaded", async () => {
    const health = await fetch(`${t.gatewayUrl}/healthz`);
    expect({ status: health.status, body: await health.json() }).toEqual({ status: 200, body: { status: "ok" } });
    const ready = await fetch(`${t.gatewayUrl}/readyz`);
    expect({ status: ready.status, body: await ready.json() }).toEqual({ status: 200, body: { status: "ready" } });
  });
});
