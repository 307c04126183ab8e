import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadMasterKey, SecretBox } from "../src/gateway/config/secrets.ts";
import { loadSnapshot } from "../src/gateway/config/snapshot.ts";
import { createLogger } from "../src/platform/logger.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, errorBody, type Call } from "./support/http.ts";
import { iso, uuid } from "./support/matchers.ts";
import { addWorkspace } from "./support/workspace.ts";

let t: TestApp;
let call: Call;

beforeAll(async () => {
  t = await startTestApp();
  call = client(t.baseUrl, t.adminKey);
});
afterAll(() => t?.stop());

async function created(path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await call("POST", path, { body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as Record<string, unknown>;
}

describe("providers", () => {
  it("stores the API key encrypted, never returns it, and can clear it", async () => {
    const provider = await created("/v1/gateway/providers", {
      name: "anthropic-main",
      kind: "anthropic",
      baseUrl: "https://api.anthropic.example/",
      apiKey: "sk-ant-secret-value",
    });
    expect(provider).toEqual({
      id: uuid,
      name: "anthropic-main",
      kind: "anthropic",
      baseUrl: "https://api.anthropic.example",
      hasApiKey: true,
      connectTimeoutMs: 10000,
      headersTimeoutMs: 300000,
      bodyTimeoutMs: 300000,
      maxInFlight: 256,
      apiVersion: null,
      // sha256("sk-ant-secret-value") = 70a1b8224a9a…
      apiKeySha256Prefix: "70a1b8224a9a",
      dateCreated: iso,
      dateUpdated: iso,
    });
    const [row] = await t.app.orm.em.fork().execute<{ api_key_ciphertext: Buffer }[]>(
      "select api_key_ciphertext from gateway_provider where id = ?",
      [provider.id],
    );
    expect(row!.api_key_ciphertext.toString("latin1")).not.toContain("sk-ant-secret-value");
    const box = new SecretBox(await loadMasterKey(undefined, t.config.dataDir));
    expect(box.open(row!.api_key_ciphertext)).toBe("sk-ant-secret-value");

    const listed = await call("GET", "/v1/gateway/providers");
    expect(JSON.stringify(listed.body)).not.toContain("sk-ant-secret-value");

    const cleared = await call("PATCH", `/v1/gateway/providers/${provider.id}`, { body: { apiKey: null, maxInFlight: 8 } });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ hasApiKey: false, apiKeySha256Prefix: null, maxInFlight: 8, name: "anthropic-main" });
  });

  it("refuses bad input with the field named", async () => {
    const cases: [unknown, string][] = [
      [{ name: "x", kind: "bedrock", baseUrl: "https://a" }, "kind must be one of: anthropic, openai, azure_openai, openai_compatible"],
      [{ name: "x", baseUrl: "https://a" }, "kind is required"],
      [{ name: "x", kind: "openai", baseUrl: "ftp://a" }, "baseUrl must be an http or https URL without a query or fragment"],
      [{ name: "has space", kind: "openai", baseUrl: "https://a" }, "name may hold letters, digits, dots, dashes and underscores, and starts with a letter or digit"],
      [{ name: "x", kind: "openai", baseUrl: "https://a", maxInFlight: 0 }, "maxInFlight must be an integer from 1 to 100000"],
    ];
    for (const [body, message] of cases) {
      const res = await call("POST", "/v1/gateway/providers", { body });
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: errorBody(message, "invalid_argument") });
    }
    await created("/v1/gateway/providers", { name: "dup", kind: "openai", baseUrl: "https://a" });
    const dup = await call("POST", "/v1/gateway/providers", { body: { name: "dup", kind: "openai", baseUrl: "https://b" } });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual(errorBody('A provider named "dup" already exists', "already_exists"));
  });
});

describe("keys, users, groups and access rules", () => {
  it("shows a key's secret once, with the gateway's own prefix", async () => {
    const user = await created("/v1/gateway/users", { name: "Ada", email: "ada@example.com" });
    const group = await created("/v1/gateway/groups", { name: "research" });
    const key = await created("/v1/gateway/keys", { name: "ada-laptop", userId: user.id, groupIds: [group.id] });
    expect(key).toEqual({
      id: uuid,
      name: "ada-laptop",
      keyPrefix: expect.stringMatching(/^sk-wg-.{4}$/),
      secret: expect.stringMatching(/^sk-wg-[A-Za-z0-9_-]{43}$/),
      userId: user.id,
      groupIds: [group.id],
      disabled: false,
      dateCreated: iso,
      dateUpdated: iso,
      inferencePipelineId: null,
      serverTiming: false,
    });
    const listed = await call("GET", "/v1/gateway/keys");
    const items = (listed.body as { items: Record<string, unknown>[] }).items;
    expect(items.find((k) => k.id === key.id)).toMatchObject({ secret: null, keyPrefix: key.keyPrefix });
    const disabled = await call("PATCH", `/v1/gateway/keys/${key.id}`, { body: { disabled: true } });
    expect(disabled.body).toMatchObject({ disabled: true, name: "ada-laptop", groupIds: [group.id] });

    const wrongGroup = await call("POST", "/v1/gateway/keys", { body: { groupIds: [key.id] } });
    expect(wrongGroup.body).toEqual(errorBody("groupIds names a group that is not in this workspace", "invalid_argument"));
  });

  it("takes block rules on the workspace and allow lists on keys, users and groups", async () => {
    const key = await created("/v1/gateway/keys", {});
    const block = await created("/v1/gateway/access-rules", { effect: "block", subject: "workspace", models: ["gpt-3*"] });
    expect(block).toEqual({ id: uuid, effect: "block", subject: "workspace", subjectId: null, models: ["gpt-3*"], dateCreated: iso });
    const allow = await created("/v1/gateway/access-rules", { effect: "allow", subject: "key", subjectId: key.id, models: ["claude-*"] });
    expect(allow).toMatchObject({ effect: "allow", subject: "key", subjectId: key.id });

    const bad: [unknown, string][] = [
      [{ effect: "block", subject: "key", subjectId: key.id, models: ["x"] }, "A block rule applies to the workspace: subject must be workspace"],
      [{ effect: "allow", subject: "workspace", models: ["x"] }, "An allow list applies to a key, a user or a group"],
      [{ effect: "allow", subject: "user", subjectId: key.id, models: ["x"] }, "subjectId names no user of this workspace"],
      [{ effect: "allow", subject: "key", subjectId: key.id, models: [] }, "models must name at least one model"],
      [{ effect: "allow", subject: "key", subjectId: key.id }, "models is required"],
    ];
    for (const [body, message] of bad) {
      const res = await call("POST", "/v1/gateway/access-rules", { body });
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: errorBody(message, "invalid_argument") });
    }
  });

  it("keeps another workspace's configuration out of reach", async () => {
    const other = await addWorkspace(t.app);
    const theirs = client(t.baseUrl, other.key);
    const provider = await theirs("POST", "/v1/gateway/providers", { body: { name: "theirs", kind: "openai", baseUrl: "https://x" } });
    expect(provider.status).toBe(201);
    const id = (provider.body as { id: string }).id;
    expect((await call("GET", `/v1/gateway/providers/${id}`)).status).toBe(404);
    expect((await call("DELETE", `/v1/gateway/providers/${id}`)).body).toEqual(errorBody("Provider not found", "not_found"));
    const mine = (await call("GET", "/v1/gateway/providers")).body as { items: { name: string }[] };
    expect(mine.items.map((p) => p.name)).not.toContain("theirs");
  });

  it("lets only an admin of the Default workspace change the gateway-wide settings, which every workspace may read", async () => {
    const other = await addWorkspace(t.app);
    const theirs = client(t.baseUrl, other.key);
    const denied = await theirs("PUT", "/v1/gateway/settings", { body: { maxInFlight: 1 } });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual(
      errorBody("Gateway-wide settings may be changed only by an admin of the workspace that operates this Warden (the Default workspace).", "permission_denied"),
    );
    const read = await theirs("GET", "/v1/gateway/settings");
    expect(read.status).toBe(200);
    expect((read.body as { maxInFlight: number }).maxInFlight).not.toBe(1);
    const mine = await call("PUT", "/v1/gateway/settings", { body: { maxInFlight: 900 } });
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual({ maxInFlight: 900, dateUpdated: iso });
    expect((await theirs("GET", "/v1/gateway/settings")).body).toEqual({ maxInFlight: 900, dateUpdated: iso });
  });

  it("lets a VIEWER read the configuration and nothing more", async () => {
    const ws = (await t.app.orm.em.fork().execute<{ id: string }[]>("select id from workspace where slug = 'default'"))[0]!.id;
    const viewer = await call("POST", `/v1/workspaces/${ws}/api-keys`, { body: { role: "VIEWER" } });
    const asViewer = client(t.baseUrl, (viewer.body as { secureKey: string }).secureKey);
    expect((await asViewer("GET", "/v1/gateway/routing-rules")).status).toBe(200);
    const denied = await asViewer("POST", "/v1/gateway/keys", { body: {} });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual(errorBody("The VIEWER role may not call CreateGatewayKey.", "permission_denied"));
  });
});

describe("the snapshot", () => {
  it("holds what the control plane stored, with provider keys decrypted", async () => {
    await created("/v1/gateway/providers", { name: "openai-main", kind: "openai", baseUrl: "https://api.openai.example", apiKey: "sk-openai" });
    await created("/v1/gateway/routing-rules", { priority: 5, models: ["gpt-*"], providerName: "openai-main", upstreamModel: "gpt-4o" });
    await created("/v1/gateway/routing-rules", { priority: 10, providerName: "anthropic-main" });
    const settings = await call("PUT", "/v1/gateway/settings", { body: { maxInFlight: 77 } });
    expect(settings.body).toEqual({ maxInFlight: 77, dateUpdated: iso });
    const key = await created("/v1/gateway/keys", { name: "snap" });

    const snapshot = await loadSnapshot(
      {
        orm: t.app.orm,
        secrets: new SecretBox(await loadMasterKey(undefined, t.config.dataDir)),
        defaultMaxInFlight: 1024,
        logger: createLogger("silent"),
      },
      1,
    );
    expect(snapshot.settings.maxInFlight).toBe(77);
    const workspaceKey = [...snapshot.keysByHash.values()].find((k) => k.id === key.id)!;
    const config = snapshot.workspaces.get(workspaceKey.workspaceId)!;
    expect(config.providersByName.get("openai-main")).toMatchObject({ kind: "openai", apiKey: "sk-openai", baseUrl: "https://api.openai.example" });
    expect(config.routingRules.map((r) => [r.priority, r.models, r.targets])).toEqual([
      [5, ["gpt-*"], [{ providerName: "openai-main", upstreamModel: "gpt-4o", weight: null }]],
      [10, [], [{ providerName: "anthropic-main", upstreamModel: null, weight: null }]],
    ]);
    expect(config.blockedModels).toEqual(["gpt-3*"]);
  });
});

describe("guardrails and usage limits", () => {
  it("configures a guardrail per kind and stage, with thresholds and plug-ins checked", async () => {
    const pii = await created("/v1/gateway/guardrails", { kind: "pii", stage: "input", piiEntityTypes: ["CREDIT_CARD", "US_SSN"] });
    expect(pii).toEqual({
      id: uuid,
      kind: "pii",
      stage: "input",
      enabled: true,
      piiEntityTypes: ["CREDIT_CARD", "US_SSN"],
      injectionThreshold: null,
      contentThresholds: {},
      onError: "fail_open",
      action: "block",
      modelPath: null,
      tokenizerPath: null,
      classifierUrl: null,
      classifierTimeoutMs: null,
      dateCreated: iso,
      dateUpdated: iso,
    });
    const redacting = await call("PATCH", `/v1/gateway/guardrails/${pii.id}`, { body: { action: "redact" } });
    expect(redacting.body).toMatchObject({ action: "redact", piiEntityTypes: ["CREDIT_CARD", "US_SSN"] });
    const safety = await created("/v1/gateway/guardrails", {
      kind: "content_safety",
      stage: "output",
      contentThresholds: { hate: 0.8, violence: 0.9 },
      onError: "fail_closed",
    });
    expect(safety).toMatchObject({ contentThresholds: { hate: 0.8, violence: 0.9 }, onError: "fail_closed" });
    const off = await call("PATCH", `/v1/gateway/guardrails/${pii.id}`, { body: { enabled: false } });
    expect(off.body).toMatchObject({ enabled: false, piiEntityTypes: ["CREDIT_CARD", "US_SSN"] });

    const bad: [unknown, number, string, string][] = [
      [{ kind: "pii", stage: "input" }, 409, "A pii guardrail on the input stage already exists: update it instead", "already_exists"],
      [{ kind: "pii", stage: "output", piiEntityTypes: ["NAME"] }, 400, "piiEntityTypes[0] must be one of: CREDIT_CARD, US_SSN, IBAN_CODE, EMAIL_ADDRESS, PHONE_NUMBER, IP_ADDRESS, US_PASSPORT, CRYPTO", "invalid_argument"],
      [{ kind: "prompt_injection", stage: "input", injectionThreshold: 1.5 }, 400, "injectionThreshold must be a number from 0 to 1", "invalid_argument"],
      [{ kind: "content_safety", stage: "input", contentThresholds: { spam: 0.5 } }, 400, 'contentThresholds has an unknown category "spam": use hate, harassment, violence, sexual, self_harm, profanity', "invalid_argument"],
      [{ kind: "prompt_injection", stage: "input", modelPath: "/m.onnx" }, 400, "modelPath and tokenizerPath go together", "invalid_argument"],
      [{ kind: "prompt_injection", stage: "input", classifierUrl: "ftp://x" }, 400, "classifierUrl must be an http or https URL without a query or fragment", "invalid_argument"],
      [{ kind: "content_safety", stage: "input", action: "redact" }, 400, "action redact is for PII guardrails only", "invalid_argument"],
      [{ kind: "pii", stage: "output", action: "redact", classifierUrl: "http://127.0.0.1:9/classify" }, 400, "action redact needs the built-in PII detector: a plug-in does not say where the entities are", "invalid_argument"],
      [{ kind: "pii", stage: "output", action: "erase" }, 400, "action must be one of: block, redact", "invalid_argument"],
    ];
    for (const [body, status, message, code] of bad) {
      const res = await call("POST", "/v1/gateway/guardrails", { body });
      expect({ status: res.status, body: res.body }).toEqual({ status, body: errorBody(message, code) });
    }
  });

  it("sets usage limits on keys, users and groups, one per period", async () => {
    const key = await created("/v1/gateway/keys", {});
    const limit = await created("/v1/gateway/usage-limits", { scope: "key", subjectId: key.id, period: "daily", tokenLimit: 1000 });
    expect(limit).toEqual({ id: uuid, scope: "key", subjectId: key.id, period: "daily", unit: "tokens", tokenLimit: 1000, costLimitUsd: null, requestLimit: null, dateCreated: iso, dateUpdated: iso });
    const raised = await call("PATCH", `/v1/gateway/usage-limits/${limit.id}`, { body: { tokenLimit: 5000 } });
    expect(raised.body).toMatchObject({ tokenLimit: 5000 });
    const again = await call("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period: "daily", tokenLimit: 1 } });
    expect(again.body).toEqual(errorBody("This key already has a daily token limit: update it instead", "already_exists"));
    const noGroup = await call("POST", "/v1/gateway/usage-limits", { body: { scope: "group", subjectId: key.id, period: "weekly", tokenLimit: 1 } });
    expect(noGroup.body).toEqual(errorBody("subjectId names no group of this workspace", "invalid_argument"));
    const zero = await call("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period: "weekly", tokenLimit: 0 } });
    expect(zero.body).toEqual(errorBody("Set exactly one of tokenLimit, costLimitUsd and requestLimit", "invalid_argument"));
    const negative = await call("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period: "weekly", tokenLimit: -5 } });
    expect(negative.body).toEqual(errorBody("tokenLimit must be a positive integer", "invalid_argument"));
  });

  it("sets limits in dollars and in requests beside tokens, one of each unit per period", async () => {
    const key = await created("/v1/gateway/keys", {});
    const dollars = await created("/v1/gateway/usage-limits", { scope: "key", subjectId: key.id, period: "daily", costLimitUsd: 2.5 });
    expect(dollars).toEqual({ id: uuid, scope: "key", subjectId: key.id, period: "daily", unit: "usd", tokenLimit: 0, costLimitUsd: 2.5, requestLimit: null, dateCreated: iso, dateUpdated: iso });
    const requests = await created("/v1/gateway/usage-limits", { scope: "key", subjectId: key.id, period: "daily", requestLimit: 100 });
    expect(requests).toMatchObject({ unit: "requests", tokenLimit: 0, costLimitUsd: null, requestLimit: 100 });
    const tokens = await created("/v1/gateway/usage-limits", { scope: "key", subjectId: key.id, period: "daily", tokenLimit: 10 });
    expect(tokens).toMatchObject({ unit: "tokens", tokenLimit: 10 });
    const raised = await call("PATCH", `/v1/gateway/usage-limits/${dollars.id}`, { body: { costLimitUsd: 0.000001 } });
    expect(raised.body).toMatchObject({ unit: "usd", costLimitUsd: 0.000001 });
    const wrongUnit = await call("PATCH", `/v1/gateway/usage-limits/${dollars.id}`, { body: { tokenLimit: 5 } });
    expect(wrongUnit.body).toEqual(errorBody("This is a dollar limit: set costLimitUsd", "invalid_argument"));
    const two = await call("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period: "weekly", tokenLimit: 5, requestLimit: 5 } });
    expect(two.body).toEqual(errorBody("Set exactly one of tokenLimit, costLimitUsd and requestLimit", "invalid_argument"));
    for (const costLimitUsd of [0, -1, 0.0000001, 2e9]) {
      const bad = await call("POST", "/v1/gateway/usage-limits", { body: { scope: "key", subjectId: key.id, period: "weekly", costLimitUsd } });
      expect(bad.body, String(costLimitUsd)).toEqual(errorBody("costLimitUsd must be a positive number of dollars, to the micro-dollar, at most 1000000000", "invalid_argument"));
    }
  });
});
