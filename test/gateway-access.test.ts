import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "./support/app.ts";
import { setUpGateway, type GatewayFixture } from "./support/gateway-setup.ts";

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

async function keyAllowedOnly(models: string[]): Promise<string> {
  const key = (await g.admin("POST", "/v1/gateway/keys", { body: {} })).body as { id: string; secret: string };
  await g.admin("POST", "/v1/gateway/access-rules", { body: { effect: "allow", subject: "key", subjectId: key.id, models } });
  await t.app.gateway!.watcher.reload();
  return key.secret;
}

describe("model access and listings", () => {
  it("names the allowed patterns when an allow list holds globs only", async () => {
    const secret = await keyAllowedOnly(["gpt-4*"]);
    const res = await fetch(`${t.gatewayUrl}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}` },
      body: JSON.stringify({ model: "claude-x", input: "hi" }),
    });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({
      error: {
        message: "The model 'claude-x' is not available to this API key. Available models include: gpt-4*. If this is unexpected, contact your administrator.",
        type: "permission_error",
        param: null,
        code: null,
      },
    });
  });

  it("lists the exact models a key may use, in each family's shape, and answers HEAD", async () => {
    await g.admin("POST", "/v1/gateway/routing-rules", { body: { priority: 5, models: ["gpt-listed", "claude-listed", "gpt-*"], providerName: "openai" } });
    const secret = await keyAllowedOnly(["gpt-listed", "claude-*"]);
    const openai = await fetch(`${t.gatewayUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
    expect(await openai.json()).toEqual({
      object: "list",
      data: [
        { id: "claude-listed", object: "model", created: 0, owned_by: "warden" },
        { id: "gpt-listed", object: "model", created: 0, owned_by: "warden" },
      ],
    });
    const anthropic = await fetch(`${t.gatewayUrl}/anthropic/v1/models`, { headers: { "x-api-key": secret } });
    expect(await anthropic.json()).toMatchObject({ data: [{ type: "model", id: "claude-listed" }, { type: "model", id: "gpt-listed" }], has_more: false, first_id: "claude-listed", last_id: "gpt-listed" });
    const head = await fetch(`${t.gatewayUrl}/v1/models`, { method: "HEAD", headers: { authorization: `Bearer ${secret}` } });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });
});
