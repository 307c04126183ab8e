import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli/main.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { startFakeProvider, type FakeProvider } from "./support/fake-providers.ts";
import { client, type Call } from "./support/http.ts";

/**
 * The `warden` CLI against a real Warden: the shipped example file applied to an empty workspace,
 * re-applied, changed, exported; bad files; keys. The CLI runs in process (main), and once as the
 * real bin.
 */
let t: TestApp;
let anthropic: FakeProvider;
let openai: FakeProvider;
let dir: string;
let env: Record<string, string>;
let admin: Call;

beforeAll(async () => {
  t = await startTestApp();
  [anthropic, openai] = await Promise.all([startFakeProvider("anthropic"), startFakeProvider("openai")]);
  dir = await mkdtemp(path.join(os.tmpdir(), "warden-cli-"));
  env = { WARDEN_URL: t.baseUrl, WARDEN_API_KEY: t.adminKey, ANTHROPIC_API_KEY: anthropic.apiKey, OPENAI_API_KEY: openai.apiKey };
  admin = client(t.baseUrl, t.adminKey);
});
afterAll(async () => {
  await Promise.all([anthropic?.close(), openai?.close()]);
  await t?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function warden(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const io = { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) }, cwd: dir };
  const code = await main(argv, env, io);
  return { code, stdout, stderr };
}

/** The example file, its two base URLs pointed at the fake providers. */
async function exampleFile(): Promise<string> {
  const text = await readFile("docs/examples/warden.yaml", "utf8");
  return text.replace("https://api.anthropic.com", anthropic.url).replace("https://api.openai.com/v1", `${openai.url}/v1`);
}

async function write(name: string, text: string): Promise<string> {
  await writeFile(path.join(dir, name), text);
  return name;
}

/** Everything apply manages, as the REST API lists it (IDs and dateUpdated included). */
async function listings(): Promise<Record<string, unknown>> {
  const paths = ["providers", "users", "groups", "routing-rules", "access-rules", "usage-limits", "guardrails", "prices"];
  const out: Record<string, unknown> = {};
  for (const p of paths) {
    const res = await admin("GET", `/v1/gateway/${p}`);
    expect(res.status).toBe(200);
    out[p] = (res.body as { items: unknown[] }).items;
  }
  return out;
}

const firstPlan = `+ provider anthropic
+ provider openai
+ user alice
+ group research
+ routing rule priority 10
+ routing rule priority 100
+ access rule allow group research
+ access rule block workspace
+ usage limit group research daily usd
+ usage limit user alice monthly tokens
+ guardrail pii input
+ guardrail pii output
+ guardrail prompt_injection input
+ price gpt-test on openai
Plan: 14 to create, 0 to update, 0 to replace, 0 to delete.
`;

describe("warden apply and export", () => {
  it("configures an empty Warden so that an SDK call succeeds, with a key made by warden keys create", async () => {
    const file = await write("warden.yaml", await exampleFile());
    expect(await warden("apply", file, "--dry-run")).toEqual({ code: 0, stdout: firstPlan, stderr: "" });
    expect((await listings()).providers).toEqual([]);

    expect(await warden("apply", file)).toEqual({ code: 0, stdout: `${firstPlan}Applied 14 changes.\n`, stderr: "" });
    const created = await warden("keys", "create", "--name", "ci", "--group", "research", "--json");
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout) as { secret: string; name: string; groupIds: string[] };
    expect(key.name).toBe("ci");
    expect(key.secret).toMatch(/^sk-wg-/);
    await t.app.gateway!.watcher.reload();

    const sdk = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: key.secret, maxRetries: 0 });
    const response = await sdk.responses.create({ model: "gpt-test", input: "Hi" });
    expect(response.output_text).toBe("Hello from openai");
    // Through the provider and key of the file.
    expect(openai.requests.at(-1)!.headers.authorization).toBe(`Bearer ${openai.apiKey}`);
    // The file's block rule holds.
    await expect(sdk.responses.create({ model: "o1-pro-test", input: "Hi" })).rejects.toMatchObject({ status: 403 });
  });

  it("a second apply changes nothing", async () => {
    const before = await listings();
    expect(await warden("apply", "warden.yaml")).toEqual({ code: 0, stdout: "No changes: the workspace matches the file.\n", stderr: "" });
    expect(await listings()).toEqual(before);
  });

  it("a changed file changes only what changed", async () => {
    const before = await listings();
    const changed = (await exampleFile())
      .replace(`${openai.url}/v1`, openai.url.replace("127.0.0.1", "localhost"))
      .replace("tokens: 2000000", "tokens: 3000000")
      .replace(/  - kind: prompt_injection\n    stage: input\n    injectionThreshold: 0.9\n    onError: fail_closed\n/, "");
    const file = await write("changed.yaml", changed);
    const plan = `~ provider openai: baseUrl "${openai.url}" → "${openai.url.replace("127.0.0.1", "localhost")}"
~ usage limit user alice monthly tokens: limit 2000000 → 3000000
- guardrail prompt_injection input
Plan: 0 to create, 2 to update, 0 to replace, 1 to delete.
`;
    expect(await warden("apply", file, "--dry-run")).toEqual({ code: 0, stdout: plan, stderr: "" });
    expect(await warden("apply", file)).toEqual({ code: 0, stdout: `${plan}Applied 3 changes.\n`, stderr: "" });

    const after = await listings();
    type Row = Record<string, unknown>;
    const [anthropicBefore, openaiBefore] = before.providers as Row[];
    expect(after.providers).toEqual([anthropicBefore, { ...openaiBefore, baseUrl: openai.url.replace("127.0.0.1", "localhost"), dateUpdated: expect.any(String) }]);
    expect((after.providers as Row[])[1]!.dateUpdated).not.toBe(openaiBefore!.dateUpdated);
    const limitsBefore = before["usage-limits"] as Row[];
    const alice = limitsBefore.find((l) => l.scope === "user")!;
    expect(after["usage-limits"]).toEqual(limitsBefore.map((l) => (l === alice ? { ...alice, tokenLimit: 3000000, dateUpdated: expect.any(String) } : l)));
    expect(after.guardrails).toEqual((before.guardrails as Row[]).filter((g) => g.kind !== "prompt_injection"));
    for (const same of ["users", "groups", "routing-rules", "access-rules", "prices"]) expect(after[same]).toEqual(before[same]);
    expect(await warden("apply", file)).toEqual({ code: 0, stdout: "No changes: the workspace matches the file.\n", stderr: "" });
  });

  it("export writes the workspace as a file that applies with no changes", async () => {
    const exported = await warden("export", "--output", "exported.yaml");
    expect(exported).toEqual({ code: 0, stdout: "", stderr: "" });
    const text = await readFile(path.join(dir, "exported.yaml"), "utf8");
    expect(text).toBe(`version: 1
providers:
  - name: anthropic
    kind: anthropic
    baseUrl: ${anthropic.url}
    apiKey:
      env: WARDEN_PROVIDER_ANTHROPIC_API_KEY
  - name: openai
    kind: openai
    baseUrl: ${openai.url.replace("127.0.0.1", "localhost")}
    apiKey:
      env: WARDEN_PROVIDER_OPENAI_API_KEY
    maxInFlight: 64
users:
  - name: alice
    email: alice@example.com
groups:
  - name: research
routingRules:
  - priority: 10
    models:
      - claude-*
    targets:
      - provider: anthropic
  - priority: 100
    targets:
      - provider: openai
accessRules:
  - effect: allow
    group: research
    models:
      - claude-*
      - gpt-*
  - effect: block
    models:
      - o1-pro*
usageLimits:
  - group: research
    period: daily
    usd: 25
  - user: alice
    period: monthly
    tokens: 3000000
guardrails:
  - kind: pii
    stage: input
    piiEntityTypes:
      - CREDIT_CARD
      - US_SSN
  - kind: pii
    stage: output
    piiEntityTypes:
      - CREDIT_CARD
      - EMAIL_ADDRESS
    action: redact
prices:
  - model: gpt-test
    provider: openai
    inputPerMillion: 2.5
    outputPerMillion: 10
`);
    expect((await warden("export")).stdout).toBe(text);
    env.WARDEN_PROVIDER_ANTHROPIC_API_KEY = anthropic.apiKey;
    env.WARDEN_PROVIDER_OPENAI_API_KEY = openai.apiKey;
    expect(await warden("apply", "exported.yaml", "--dry-run")).toEqual({ code: 0, stdout: "No changes: the workspace matches the file.\n", stderr: "" });
  });

  it("a changed secret is applied, and shown as changed, never printed", async () => {
    const file = await write("secret.yaml", (await exampleFile()).replace("{env: OPENAI_API_KEY}", "{env: OTHER_KEY}"));
    env.OTHER_KEY = "sk-another-openai-key";
    const res = await warden("apply", file, "--dry-run", "--no-prune");
    expect(res).toEqual({
      code: 0,
      stdout: `~ provider openai: baseUrl "${openai.url.replace("127.0.0.1", "localhost")}" → "${openai.url}"; apiKey changed
~ usage limit user alice monthly tokens: limit 3000000 → 2000000
+ guardrail prompt_injection input
Plan: 1 to create, 2 to update, 0 to replace, 0 to delete.
`,
      stderr: "",
    });
    expect(res.stdout).not.toContain("sk-another");
    expect((await warden("apply", file)).code).toBe(0);
    // sha256("sk-another-openai-key") begins c189595a1ab5.
    const listed = JSON.parse((await warden("providers", "list", "--json")).stdout) as { name: string; apiKeySha256Prefix: string }[];
    expect(listed.map((p) => [p.name, p.apiKeySha256Prefix])).toEqual([["anthropic", "f9270d5d7957"], ["openai", "c189595a1ab5"]]);
    // Back to the example's key: only the key changes.
    expect(await warden("apply", "warden.yaml")).toEqual({
      code: 0,
      stdout: "~ provider openai: apiKey changed\nPlan: 0 to create, 1 to update, 0 to replace, 0 to delete.\nApplied 1 change.\n",
      stderr: "",
    });
  });
});

describe("bad files", () => {
  it.each([
    ["an inline secret", (f: string) => f.replace("{env: OPENAI_API_KEY}", "sk-live-inline"), "bad.yaml: providers[1].apiKey: a secret is never written in the file: give the environment variable that holds it, as {env: NAME}\n"],
    ["an unknown field", (f: string) => f.replace("    maxInFlight: 64\n", "    maxInFlight: 64\n    retries: 3\n"), "bad.yaml: providers[1].retries: unknown field\n"],
    ["a dangling reference", (f: string) => f.replace("      - provider: openai\n", "      - provider: opneai\n"), 'bad.yaml: routingRules[1].targets[0].provider: no provider named "opneai" in providers\n'],
    ["an unset variable", (f: string) => f.replace("{env: OPENAI_API_KEY}", "{env: UNSET_OPENAI_KEY}"), "bad.yaml: providers[1].apiKey: the environment variable UNSET_OPENAI_KEY is not set\n"],
    ["a duplicate", (f: string) => f.replace("  - name: research\n", "  - name: research\n  - name: research\n"), "bad.yaml: groups[1]: group research is already groups[0]\n"],
    ["a key that is not there", (f: string) => f.replace("    group: research\n    models:", "    key: nobody\n    models:"), 'bad.yaml: accessRules[1].key: no gateway key named "nobody" in the workspace\n'],
  ])("%s: exit 2 with the place and the problem", async (_name, edit, message) => {
    const before = await listings();
    const file = await write("bad.yaml", edit(await exampleFile()));
    expect(await warden("apply", file)).toEqual({ code: 2, stdout: "", stderr: message });
    expect(await listings()).toEqual(before);
  });

  it("a change the API cannot make is refused before anything changes, exit 1", async () => {
    const before = await listings();
    const file = await write("email.yaml", (await exampleFile()).replace("alice@example.com", "alice@example.org").replace("tokens: 2000000", "tokens: 5"));
    expect(await warden("apply", file)).toEqual({
      code: 1,
      stdout: "",
      stderr: "warden apply: user alice: a user's email cannot be changed (a user would have to be deleted, and its keys would lose their owner)\n",
    });
    expect(await listings()).toEqual(before);
  });

  it("a server error prints its message and code, exit 1", async () => {
    env.WARDEN_API_KEY = "sk-not-a-key";
    try {
      expect(await warden("providers", "list")).toEqual({ code: 1, stdout: "", stderr: "warden providers list: Invalid API key. (unauthenticated)\n" });
    } finally {
      env.WARDEN_API_KEY = t.adminKey;
    }
  });
});

describe("warden keys", () => {
  it("creates, lists and disables a key; a disabled key gets 401 from the gateway", async () => {
    const created = await warden("keys", "create", "--name", "temp");
    expect(created.code).toBe(0);
    const [, id, secret] = /^Created key temp \(([0-9a-f-]{36})\)\. Its secret, shown only now:\n(sk-wg-\S+)\n$/.exec(created.stdout)!;
    const listed = await warden("keys", "list", "--json");
    const keys = JSON.parse(listed.stdout) as { id: string; name: string; disabled: boolean; secret?: string }[];
    expect(keys.map((k) => [k.name, k.disabled, "secret" in k])).toEqual([["ci", false, false], ["temp", false, false]]);

    await t.app.gateway!.watcher.reload();
    const sdk = new OpenAI({ baseURL: `${t.gatewayUrl}/v1`, apiKey: secret!, maxRetries: 0 });
    expect((await sdk.responses.create({ model: "gpt-test", input: "Hi" })).output_text).toBe("Hello from openai");

    expect(await warden("keys", "disable", "temp")).toEqual({ code: 0, stdout: `Disabled key temp (${id}).\n`, stderr: "" });
    await t.app.gateway!.watcher.reload();
    await expect(sdk.responses.create({ model: "gpt-test", input: "Hi" })).rejects.toMatchObject({ status: 401 });
    expect(await warden("keys", "disable", "nope")).toEqual({ code: 2, stdout: "", stderr: "warden keys disable: No gateway key named nope (see warden keys disable --help)\n" });
  });

  it("shows usage with cost by model and day, and the request log", async () => {
    await t.app.gateway!.requestLog.flush();
    // Two calls of gpt-test (keys ci and temp), at the file's $2.50 / $10: 11 × 2.5 + 7 × 10 = 97.5 micro-dollars each.
    const usage = await warden("usage", "--by", "model", "--bucket", "day", "--json");
    expect(usage.code).toBe(0);
    const rows = (JSON.parse(usage.stdout) as { items: Record<string, unknown>[] }).items;
    const day = new Date();
    day.setUTCHours(0, 0, 0, 0);
    expect(rows.find((row) => row.subject === "gpt-test")).toMatchObject({ name: "gpt-test", requests: "2", inputTokens: "22", costUsd: 0.000195, bucketStart: day.toISOString().replace(".000Z", "Z") });
    const table = await warden("usage", "--by", "model", "--bucket", "day");
    expect(table.stdout).toMatch(new RegExp(`^${day.toISOString().replace(/[.]/g, "\\.")}\\s+gpt-test\\s+2\\s+22\\s+14\\s+36\\s+0\\.000195$`, "m"));
    expect(await warden("usage", "--bucket", "week")).toEqual({ code: 2, stdout: "", stderr: "warden usage: --bucket must be one of: none, hour, day (see warden usage --help)\n" });
    const logs = await warden("logs", "--model", "gpt-test", "--json");
    expect((JSON.parse(logs.stdout) as { items: { costUsd: number }[] }).items.map((entry) => entry.costUsd)).toEqual([0.0000975, 0.0000975]);
    // The first test's call of a blocked model, found by its endpoint and error type.
    const entries = async (...args: string[]) => (JSON.parse((await warden("logs", ...args, "--json")).stdout) as { items: { model: string; status: number }[] }).items;
    expect((await entries("--endpoint", "responses", "--error-type", "permission_error")).map((e) => [e.model, e.status])).toEqual([["o1-pro-test", 403]]);
    // alice (a user of the file) owns no key; nothing moved to a fallback.
    expect(await entries("--user", "alice")).toEqual([]);
    expect(await entries("--superseded")).toEqual([]);
  });

  it("the real bin runs", async () => {
    const { stdout } = await promisify(execFile)(path.resolve("node_modules/.bin/node"), [path.resolve("bin/warden.ts"), "providers", "list", "--json"], {
      env: { PATH: process.env.PATH, WARDEN_URL: t.baseUrl, WARDEN_API_KEY: t.adminKey },
      timeout: 30_000,
    });
    expect((JSON.parse(stdout) as { name: string }[]).map((p) => p.name)).toEqual(["anthropic", "openai"]);
  });
});
