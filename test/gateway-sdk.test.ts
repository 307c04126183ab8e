import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
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

async function bytes(url: string, init: RequestInit): Promise<{ status: number; type: string | null; body: string }> {
  const res = await fetch(url, init);
  return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
}

describe("the official SDKs through the gateway", () => {
  it("anthropic: messages, plain and streamed", async () => {
    const anthropic = new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 0 });
    const message = await anthropic.messages.create({ model: "claude-test", max_tokens: 64, messages: [{ role: "user", content: "Hi" }] });
    expect(message.content[0]).toMatchObject({ type: "text" });
    const stream = anthropic.messages.stream({ model: "claude-test", max_tokens: 64, messages: [{ role: "user", content: "Hi" }] });
    const final = await stream.finalMessage();
    expect(final.content[0]).toMatchObject({ type: "text", text: expect.any(String) });
    expect(g.anthropic.requests.at(-1)!.headers["x-api-key"]).toBe(g.anthropic.apiKey);
  });

  it("openai: responses, embeddings, images, plain and streamed", async () => {
    const openai = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: g.key, maxRetries: 0 });
    const response = await openai.responses.create({ model: "gpt-test", input: "Hi" });
    expect(response.output_text).toBeTruthy();
    const stream = await openai.responses.create({ model: "gpt-test", input: "Hi", stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types.at(-1)).toBe("response.completed");
    const embeddings = await openai.embeddings.create({ model: "text-embedding-test", input: ["a", "b"] });
    expect(embeddings.data).toHaveLength(2);
    const image = await openai.images.generate({ model: "image-test", prompt: "a cat" });
    expect(image.data?.[0]?.b64_json).toBeTruthy();
    const azure = await openai.responses.create({ model: "azure-test", input: "Hi" });
    expect(azure.output_text).toBeTruthy();
    expect(g.azure.requests.at(-1)!.query.get("api-version")).toBe("2025-04-01-preview");
  });

  it.each([
    ["messages", "/v1/messages", "anthropic", { model: "claude-test", max_tokens: 32, messages: [{ role: "user", content: "Same bytes?" }] }],
    ["messages, streamed", "/v1/messages", "anthropic", { model: "claude-test", max_tokens: 32, stream: true, messages: [{ role: "user", content: "Same bytes?" }] }],
    ["responses", "/v1/responses", "openai", { model: "gpt-test", input: "Same bytes?" }],
    ["responses, streamed", "/v1/responses", "openai", { model: "gpt-test", input: "Same bytes?", stream: true }],
    ["embeddings", "/v1/embeddings", "openai", { model: "text-embedding-test", input: ["a", "b"] }],
    ["images", "/v1/images/generations", "openai", { model: "image-test", prompt: "a cat" }],
  ] as const)("%s: the caller gets the provider's bytes", async (_name, path, kind, request) => {
    const fake = kind === "anthropic" ? g.anthropic : g.openai;
    const body = JSON.stringify(request);
    const auth: Record<string, string> = kind === "anthropic" ? { "x-api-key": fake.apiKey } : { authorization: `Bearer ${fake.apiKey}` };
    const direct = await bytes(`${fake.url}${path}`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body });
    const through = await bytes(`${t.gatewayUrl}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.key}`, "content-type": "application/json" },
      body,
    });
    expect(direct.status).toBe(200);
    expect(through).toEqual(direct);
  });

  it("neither SDK retries an error that no retry can fix (x-should-retry: false)", async () => {
    // An Anthropic client asking for a model routed to a provider without a key: a configuration 503.
    expect((await g.admin("POST", "/v1/gateway/providers", { body: { name: "keyless", kind: "anthropic", baseUrl: g.anthropic.url } })).status).toBe(201);
    expect((await g.admin("POST", "/v1/gateway/routing-rules", { body: { priority: 1, models: ["keyless-*"], providerName: "keyless" } })).status).toBe(201);
    await t.app.gateway!.watcher.reload();
    let calls = 0;
    const counting: typeof fetch = (input, init) => {
      calls += 1;
      return fetch(input, init);
    };
    const anthropic = new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 2, fetch: counting });
    const refused = await anthropic.messages.create({ model: "keyless-test", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Anthropic.APIError);
    expect((refused as InstanceType<typeof Anthropic.APIError>).status).toBe(503);
    expect((refused as InstanceType<typeof Anthropic.APIError>).headers?.get("x-should-retry")).toBe("false");
    expect(calls).toBe(1);
    const openai = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: "sk-wg-not-a-key", maxRetries: 2, fetch: counting });
    await expect(openai.responses.create({ model: "gpt-test", input: "Hi" })).rejects.toMatchObject({ status: 401 });
    expect(calls).toBe(2);
  });

  it("takes a provider's base URL with or without its version path, and says which form it stored", async () => {
    const made = async (body: Record<string, unknown>) => {
      const res = await g.admin("POST", "/v1/gateway/providers", { body });
      expect(res.status, res.text).toBe(201);
      return res.body as { id: string; baseUrl: string };
    };
    expect(await made({ name: "openai-v1", kind: "openai", baseUrl: `${g.openai.url}/v1/`, apiKey: g.openai.apiKey })).toMatchObject({ baseUrl: g.openai.url });
    expect(await made({ name: "azure-v1", kind: "azure_openai", baseUrl: `${g.azure.url}/openai/v1`, apiKey: g.azure.apiKey, apiVersion: "2025-04-01-preview" }))
      .toMatchObject({ baseUrl: g.azure.url });
    expect(await made({ name: "anthropic-v1", kind: "anthropic", baseUrl: `${g.anthropic.url}/v1`, apiKey: g.anthropic.apiKey })).toMatchObject({ baseUrl: g.anthropic.url });
    const rules: string[] = [];
    for (const [models, providerName] of [[["v1-openai"], "openai-v1"], [["v1-azure"], "azure-v1"], [["claude-v1"], "anthropic-v1"]] as const) {
      const rule = await g.admin("POST", "/v1/gateway/routing-rules", { body: { priority: 5, models, providerName } });
      expect(rule.status).toBe(201);
      rules.push((rule.body as { id: string }).id);
    }
    await t.app.gateway!.watcher.reload();
    const openai = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: g.key, maxRetries: 0 });
    await openai.responses.create({ model: "v1-openai", input: "Hi" });
    expect(g.openai.requests.at(-1)!.path).toBe("/v1/responses");
    await openai.responses.create({ model: "v1-azure", input: "Hi" });
    expect(g.azure.requests.at(-1)!.path).toBe("/openai/v1/responses");
    const anthropic = new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 0 });
    await anthropic.messages.create({ model: "claude-v1", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] });
    expect(g.anthropic.requests.at(-1)!.path).toBe("/v1/messages");
    // The other tests see the gateway as it was.
    for (const id of rules) expect((await g.admin("DELETE", `/v1/gateway/routing-rules/${id}`)).status).toBe(200);
    await t.app.gateway!.watcher.reload();
  });

  it("model lists through both SDKs", async () => {
    const anthropic = new Anthropic({ baseURL: t.gatewayUrl, apiKey: g.key, maxRetries: 0 });
    const openai = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: g.key, maxRetries: 0 });
    await g.admin("POST", "/v1/gateway/routing-rules", { body: { priority: 1, models: ["claude-listed"], providerName: "anthropic" } });
    await t.app.gateway!.watcher.reload();
    const fromAnthropic = [];
    for await (const model of anthropic.models.list()) fromAnthropic.push(model.id);
    const fromOpenai = [];
    for await (const model of openai.models.list()) fromOpenai.push(model.id);
    expect(fromAnthropic).toEqual(["claude-listed"]);
    expect(fromOpenai).toEqual(["claude-listed"]);
  });
});
