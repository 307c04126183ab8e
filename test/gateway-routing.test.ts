import { PriceBook } from "../src/gateway/cost/price-book.ts";
import { randomBytes, randomUUID } from "node:crypto";
import { Migrator } from "@mikro-orm/migrations";
import { MikroORM } from "@mikro-orm/postgresql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../src/db/migrations/index.ts";
import { loadMasterKey, SecretBox } from "../src/gateway/config/secrets.ts";
import { loadSnapshot } from "../src/gateway/config/snapshot.ts";
import type { ProviderConfig, ProviderKind, RoutingRule, RoutingTarget, WorkspaceConfig } from "../src/gateway/config/types.ts";
import { endpointSpecs } from "../src/gateway/endpoints/specs.ts";
import { routeCandidates, type CandidateOptions } from "../src/gateway/routing/candidates.ts";
import { Cooldown, parseRetryAfter } from "../src/gateway/routing/cooldown.ts";
import { resolveRoute } from "../src/gateway/routing/resolve.ts";
import { createLogger } from "../src/platform/logger.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { createTestDatabase } from "./support/database.ts";
import { client, errorBody, type Call } from "./support/http.ts";
import { iso, uuid } from "./support/matchers.ts";

/**
 * Routing rules with several targets: the admin API over HTTP, the migration that gives the rules
 * stored before one target, the order of a call's attempts (fallbacks, weights, skipped targets,
 * cooldown), and the cooldown itself on a fake clock.
 */

// ---- the admin API ------------------------------------------------------------------------

describe("routing rules with targets, over REST", () => {
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

  async function expect400(method: string, path: string, body: unknown, message: string): Promise<void> {
    const res = await call(method, path, { body });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: errorBody(message, "invalid_argument") });
  }

  it("takes an openai_compatible provider, its base URL with or without /v1", async () => {
    const vllm = await created("/v1/gateway/providers", { name: "vllm", kind: "openai_compatible", baseUrl: "http://vllm.internal:8000/v1/", apiKey: "none" });
    expect(vllm).toEqual({
      id: uuid,
      name: "vllm",
      kind: "openai_compatible",
      baseUrl: "http://vllm.internal:8000",
      hasApiKey: true,
      // The first 12 hex digits of SHA-256("none").
      apiKeySha256Prefix: "140bedbf9c3f",
      connectTimeoutMs: 10000,
      headersTimeoutMs: 300000,
      bodyTimeoutMs: 300000,
      maxInFlight: 256,
      apiVersion: null,
      dateCreated: iso,
      dateUpdated: iso,
    });
    const ollama = await created("/v1/gateway/providers", { name: "ollama", kind: "openai_compatible", baseUrl: "http://ollama.internal:11434/prefix" });
    expect(ollama).toMatchObject({ kind: "openai_compatible", baseUrl: "http://ollama.internal:11434/prefix", hasApiKey: false });
    const moved = await call("PATCH", `/v1/gateway/providers/${ollama.id}`, { body: { baseUrl: "http://ollama.internal:11434/v1" } });
    expect(moved.body).toMatchObject({ kind: "openai_compatible", baseUrl: "http://ollama.internal:11434" });
    const [row] = await t.app.orm.em.fork().execute<{ kind: string }[]>("select kind from gateway_provider where id = ?", [vllm.id]);
    expect(row!.kind).toBe("OPENAI_COMPATIBLE");
    const listed = (await call("GET", "/v1/gateway/providers")).body as { items: { name: string; kind: string }[] };
    expect(listed.items.filter((p) => p.name === "vllm" || p.name === "ollama").map((p) => p.kind)).toEqual(["openai_compatible", "openai_compatible"]);
  });

  it("creates, lists and updates rules with targets, and answers the first target as providerName", async () => {
    const rule = await created("/v1/gateway/routing-rules", {
      priority: 3,
      models: ["llama-*"],
      targets: [
        { providerName: "vllm", upstreamModel: "meta-llama/Llama-3.3-70B-Instruct", weight: 3 },
        { providerName: "ollama", weight: 1 },
        { providerName: "openai-main", upstreamModel: "gpt-4o-mini" },
      ],
    });
    expect(rule).toEqual({
      id: uuid,
      priority: 3,
      models: ["llama-*"],
      providerName: "vllm",
      upstreamModel: "meta-llama/Llama-3.3-70B-Instruct",
      targets: [
        { providerName: "vllm", upstreamModel: "meta-llama/Llama-3.3-70B-Instruct", weight: 3 },
        { providerName: "ollama", upstreamModel: null, weight: 1 },
        { providerName: "openai-main", upstreamModel: "gpt-4o-mini", weight: null },
      ],
      dateCreated: iso,
      dateUpdated: iso,
    });

    // The one-target way, as before: a rule of one target without a weight.
    const single = await created("/v1/gateway/routing-rules", { priority: 9, providerName: "vllm", upstreamModel: "qwen" });
    expect(single).toEqual({
      id: uuid,
      priority: 9,
      models: [],
      providerName: "vllm",
      upstreamModel: "qwen",
      targets: [{ providerName: "vllm", upstreamModel: "qwen", weight: null }],
      dateCreated: iso,
      dateUpdated: iso,
    });
    const stored = await t.app.orm.em.fork().execute<{ provider_name: string; upstream_model: string | null; targets: unknown }[]>(
      "select provider_name, upstream_model, targets from gateway_routing_rule where id in (?, ?) order by priority",
      [rule.id, single.id],
    );
    expect(stored).toEqual([
      { provider_name: "vllm", upstream_model: "meta-llama/Llama-3.3-70B-Instruct", targets: (rule as { targets: unknown }).targets },
      { provider_name: "vllm", upstream_model: "qwen", targets: [{ providerName: "vllm", upstreamModel: "qwen", weight: null }] },
    ]);

    const listed = (await call("GET", "/v1/gateway/routing-rules")).body as { items: Record<string, unknown>[] };
    expect(listed.items.filter((r) => r.id === rule.id || r.id === single.id)).toEqual([rule, single]);

    // Replacing the targets.
    const replaced = await call("PATCH", `/v1/gateway/routing-rules/${rule.id}`, {
      body: { targets: [{ providerName: "ollama" }, { providerName: "vllm", upstreamModel: "llama3" }] },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual({
      ...rule,
      providerName: "ollama",
      upstreamModel: null,
      targets: [
        { providerName: "ollama", upstreamModel: null, weight: null },
        { providerName: "vllm", upstreamModel: "llama3", weight: null },
      ],
      dateUpdated: iso,
    });

    // providerName and upstreamModel change the first target; the others stay.
    const first = await call("PATCH", `/v1/gateway/routing-rules/${rule.id}`, { body: { providerName: "openai-main", upstreamModel: "gpt-4o" } });
    expect(first.body).toMatchObject({
      providerName: "openai-main",
      upstreamModel: "gpt-4o",
      targets: [
        { providerName: "openai-main", upstreamModel: "gpt-4o", weight: null },
        { providerName: "vllm", upstreamModel: "llama3", weight: null },
      ],
    });
    const cleared = await call("PATCH", `/v1/gateway/routing-rules/${rule.id}`, { body: { upstreamModel: null, priority: 4 } });
    expect(cleared.body).toMatchObject({
      priority: 4,
      providerName: "openai-main",
      upstreamModel: null,
      targets: [
        { providerName: "openai-main", upstreamModel: null, weight: null },
        { providerName: "vllm", upstreamModel: "llama3", weight: null },
      ],
    });
    // The other fields leave the targets alone.
    const models = await call("PATCH", `/v1/gateway/routing-rules/${rule.id}`, { body: { models: ["llama-3*"] } });
    expect(models.body).toMatchObject({ models: ["llama-3*"], targets: (cleared.body as { targets: unknown }).targets });
    const [row] = await t.app.orm.em.fork().execute<{ provider_name: string; upstream_model: string | null }[]>(
      "select provider_name, upstream_model from gateway_routing_rule where id = ?",
      [rule.id],
    );
    expect(row).toEqual({ provider_name: "openai-main", upstream_model: null });

    // The same provider twice, with different upstream models.
    const twice = await created("/v1/gateway/routing-rules", {
      priority: 20,
      targets: [{ providerName: "vllm", upstreamModel: "a", weight: 1 }, { providerName: "vllm", upstreamModel: "b", weight: 0 }, { providerName: "vllm" }],
    });
    expect((twice as { targets: unknown[] }).targets).toHaveLength(3);
    const eight = await created("/v1/gateway/routing-rules", {
      priority: 21,
      targets: Array.from({ length: 8 }, (_, i) => ({ providerName: `p${i}`, weight: i === 0 ? 1000 : 0 })),
    });
    expect((eight as { targets: unknown[] }).targets).toHaveLength(8);

    // Into the snapshot, in order, with weights.
    const snapshot = await loadSnapshot(
      { orm: t.app.orm, secrets: new SecretBox(await loadMasterKey(undefined, t.config.dataDir)), defaultMaxInFlight: 1024, logger: createLogger("silent") },
      1,
    );
    const config = [...snapshot.workspaces.values()].find((w) => w.routingRules.some((r) => r.id === twice.id))!;
    expect(config.routingRules.find((r) => r.id === twice.id)).toEqual({
      id: twice.id,
      workspaceId: config.workspaceId,
      priority: 20,
      models: [],
      targets: [
        { providerName: "vllm", upstreamModel: "a", weight: 1 },
        { providerName: "vllm", upstreamModel: "b", weight: 0 },
        { providerName: "vllm", upstreamModel: null, weight: null },
      ],
    });
    expect(config.providersByName.get("vllm")).toMatchObject({ kind: "openai_compatible", baseUrl: "http://vllm.internal:8000", apiKey: "none" });
  });

  it("refuses bad targets on create with the field named", async () => {
    const target = { providerName: "vllm" };
    const cases: [unknown, string][] = [
      [{ priority: 1, providerName: "vllm", targets: [target] }, "providerName and targets cannot both be given: providerName and upstreamModel set the first target only, targets sets them all."],
      [{ priority: 1, upstreamModel: "m", targets: [target] }, "upstreamModel and targets cannot both be given: providerName and upstreamModel set the first target only, targets sets them all."],
      [{ priority: 1 }, "targets is required: list 1 to 8 targets, or give providerName for a rule with one."],
      [{ priority: 1, targets: [] }, "targets is required: list 1 to 8 targets, or give providerName for a rule with one."],
      [{ priority: 1, upstreamModel: "m" }, "providerName is required"],
      [{ priority: 1, providerName: "vllm", upstreamModel: " " }, "upstreamModel must not be empty: leave it out to send the caller's model."],
      [{ priority: 1, targets: Array.from({ length: 9 }, (_, i) => ({ providerName: `p${i}` })) }, "targets must list 1 to 8 targets."],
      [{ priority: 1, targets: [target, { providerName: "ollama", weight: -1 }] }, "targets[1].weight must be an integer from 0 to 1000."],
      [{ priority: 1, targets: [target, { providerName: "ollama", weight: 1001 }] }, "targets[1].weight must be an integer from 0 to 1000."],
      [{ priority: 1, targets: [{ providerName: "vllm", weight: 1.5 }] }, "targets[0].weight must be an integer"],
      [{ priority: 1, targets: [{ providerName: "vllm", weight: "3" }] }, "targets[0].weight must be an integer"],
      [{ priority: 1, targets: [{ providerName: "vllm", weight: 0 }, { providerName: "ollama", weight: 0 }] }, "targets: at least one weight must be above 0 (a target without a weight counts as 0 when another has one)."],
      [{ priority: 1, targets: [{ providerName: "vllm", weight: 0 }, { providerName: "ollama" }] }, "targets: at least one weight must be above 0 (a target without a weight counts as 0 when another has one)."],
      [{ priority: 1, targets: [{ providerName: "vllm" }, { providerName: "ollama" }, { providerName: "vllm" }] }, "targets[2] repeats targets[0]: the same provider may appear twice only with different upstream models."],
      [{ priority: 1, targets: [{ providerName: "vllm", upstreamModel: "m" }, { providerName: "vllm", upstreamModel: "m", weight: 2 }] }, "targets[1] repeats targets[0]: the same provider may appear twice only with different upstream models."],
      [{ priority: 1, targets: [target, {}] }, "targets[1].providerName is required"],
      [{ priority: 1, targets: [{ providerName: "has space" }] }, "targets[0].providerName may hold letters, digits, dots, dashes and underscores, and starts with a letter or digit"],
      [{ priority: 1, targets: [{ providerName: "p".repeat(65) }] }, "targets[0].providerName must be at most 64 characters"],
      [{ priority: 1, targets: [{ providerName: "vllm", upstreamModel: "" }] }, "targets[0].upstreamModel must not be empty: leave it out to send the caller's model."],
      [{ priority: 1, targets: [{ providerName: "vllm", upstreamModel: "m".repeat(256) }] }, "targets[0].upstreamModel must be at most 255 characters"],
      [{ priority: 1, targets: [{ providerName: 7 }] }, "targets[0].providerName must be a string"],
      [{ priority: 1, targets: ["vllm"] }, "targets[0] must be an object"],
      [{ priority: 1, targets: { providerName: "vllm" } }, "targets must be an array"],
    ];
    for (const [body, message] of cases) await expect400("POST", "/v1/gateway/routing-rules", body, message);
    const rules = (await call("GET", "/v1/gateway/routing-rules")).body as { items: { priority: number }[] };
    expect(rules.items.filter((r) => r.priority === 1)).toEqual([]);
  });

  it("refuses bad targets on update with the field named, and changes nothing", async () => {
    const rule = await created("/v1/gateway/routing-rules", {
      priority: 30,
      models: ["x-*"],
      targets: [{ providerName: "vllm", upstreamModel: "a" }, { providerName: "ollama" }],
    });
    const path = `/v1/gateway/routing-rules/${rule.id}`;
    const cases: [unknown, string][] = [
      [{ providerName: "vllm", targets: [{ providerName: "ollama" }] }, "providerName and targets cannot both be given: providerName and upstreamModel set the first target only, targets sets them all."],
      [{ upstreamModel: null, targets: [{ providerName: "ollama" }] }, "upstreamModel and targets cannot both be given: providerName and upstreamModel set the first target only, targets sets them all."],
      [{ targets: [] }, "targets must list 1 to 8 targets."],
      [{ targets: null }, "targets must list 1 to 8 targets."],
      [{ targets: [{ providerName: "vllm", weight: 2000 }] }, "targets[0].weight must be an integer from 0 to 1000."],
      [{ targets: [{ providerName: "vllm", weight: 0 }] }, "targets: at least one weight must be above 0 (a target without a weight counts as 0 when another has one)."],
      [{ targets: [{ providerName: "vllm", colour: "red" }] }, "targets[0].colour is not an allowed property"],
      // The first target made equal to the second.
      [{ providerName: "ollama", upstreamModel: null }, "targets[1] repeats targets[0]: the same provider may appear twice only with different upstream models."],
      [{ providerName: null }, "providerName is required"],
      [{ upstreamModel: "" }, "upstreamModel must not be empty: leave it out to send the caller's model."],
    ];
    for (const [body, message] of cases) await expect400("PATCH", path, body, message);
    const after = (await call("GET", "/v1/gateway/routing-rules")).body as { items: Record<string, unknown>[] };
    expect(after.items.find((r) => r.id === rule.id)).toEqual(rule);
  });
});

// ---- the migration ------------------------------------------------------------------------

describe("the migration to targets", () => {
  it("gives every rule stored before one target, from its provider and upstream model", async () => {
    const database = await createTestDatabase();
    try {
      const orm = await MikroORM.init({
        clientUrl: database.url,
        entities: [],
        extensions: [Migrator],
        migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, silent: true, snapshot: false },
        discovery: { warnWhenNoEntities: false },
        debug: false,
      });
      const before = migrations.findIndex((m) => m.name === "Migration20261124080000") - 1;
      await orm.migrator.up({ to: migrations[before]!.name });
      const workspaceId = randomUUID();
      const em = orm.em.fork();
      await em.execute(
        `insert into workspace (id, name, slug, invite_code, status, date_created, date_updated)
         values (?, 'Old', ?, 'invite', 'ACTIVE', now(), now())`,
        [workspaceId, `old-${randomBytes(4).toString("hex")}`],
      );
      for (const [priority, provider, upstream] of [[1, "anthropic", "claude-x"], [2, "openai", null]] as const) {
        await em.execute(
          `insert into gateway_routing_rule (id, workspace_id, priority, models, provider_name, upstream_model, date_created, date_updated)
           values (?, ?, ?, '{}', ?, ?, now(), now())`,
          [randomUUID(), workspaceId, priority, provider, upstream],
        );
      }
      await orm.close();

      // The app migrates the rest, and its admin key lands in the only workspace: the one above.
      const t = await startTestApp({ database });
      try {
        const call = client(t.baseUrl, t.adminKey);
        const rules = (await call("GET", "/v1/gateway/routing-rules")).body as { items: Record<string, unknown>[] };
        expect(rules.items).toEqual([
          { id: uuid, priority: 1, models: [], providerName: "anthropic", upstreamModel: "claude-x", targets: [{ providerName: "anthropic", upstreamModel: "claude-x", weight: null }], dateCreated: iso, dateUpdated: iso },
          { id: uuid, priority: 2, models: [], providerName: "openai", upstreamModel: null, targets: [{ providerName: "openai", upstreamModel: null, weight: null }], dateCreated: iso, dateUpdated: iso },
        ]);
        // A stored rule has 1 to 8 targets, whoever writes it.
        await expect(
          t.app.orm.em.fork().execute("update gateway_routing_rule set targets = '[]'::jsonb"),
        ).rejects.toThrow(/gateway_routing_rule_targets_check/);
      } finally {
        await t.stop();
      }
    } finally {
      await database.drop();
    }
  });
});

// ---- candidates ---------------------------------------------------------------------------

function provider(name: string, kind: ProviderKind = "openai", apiKey: string | null = "sk"): ProviderConfig {
  return {
    id: `id-${name}`,
    workspaceId: "w",
    name,
    kind,
    baseUrl: `https://${name}.example`,
    apiKey,
    connectTimeoutMs: 1000,
    headersTimeoutMs: 1000,
    bodyTimeoutMs: 1000,
    maxInFlight: 10,
    apiVersion: null,
  };
}

function target(providerName: string, weight: number | null = null, upstreamModel: string | null = null): RoutingTarget {
  return { providerName, upstreamModel, weight };
}

function rule(targets: RoutingTarget[], models: string[] = []): RoutingRule {
  return { id: randomUUID(), workspaceId: "w", priority: 1, models, targets };
}

function workspace(providers: ProviderConfig[], rules: RoutingRule[] = []): WorkspaceConfig {
  return {
    workspaceId: "w",
    providersByName: new Map(providers.map((p) => [p.name, p])),
    routingRules: rules,
    blockedModels: [],
    userAllowLists: new Map(),
    groupAllowLists: new Map(),
    guardrails: { input: [], output: [] },
    usageLimits: [],
    prices: new PriceBook(),
  };
}

/** Mulberry32: a seeded generator in [0, 1), so that a draw is the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const responses = (random: () => number = () => 0): CandidateOptions => ({ endpoint: "responses", serves: (kind) => endpointSpecs.responses.target(kind) !== undefined, random });

function names(config: WorkspaceConfig, r: RoutingRule, options: CandidateOptions, model = "m"): string[] {
  const candidates = routeCandidates(config, r, model, options);
  if (!candidates.ok) throw candidates.error;
  return candidates.attempts.map((a) => `${a.provider.name}:${a.upstreamModel}`);
}

function errorOf(config: WorkspaceConfig, r: RoutingRule, options: CandidateOptions): { status: number; message: string } {
  const candidates = routeCandidates(config, r, "m", options);
  if (candidates.ok) throw new Error("expected an error");
  return { status: candidates.error.status, message: candidates.error.message };
}

describe("the attempts of a call", () => {
  const config = workspace([provider("a"), provider("b"), provider("c"), provider("d")]);

  it("tries targets without weights in their order, each with its upstream model or the caller's", () => {
    const r = rule([target("b", null, "up-b"), target("a"), target("c", null, "up-c")]);
    expect(names(config, r, responses())).toEqual(["b:up-b", "a:m", "c:up-c"]);
    // The same provider twice, with different models: two attempts.
    expect(names(config, rule([target("a", null, "x"), target("a", null, "y")]), responses())).toEqual(["a:x", "a:y"]);
    // No random draw for a rule without weights.
    expect(names(config, r, responses(() => 0.99))).toEqual(["b:up-b", "a:m", "c:up-c"]);
  });

  it("draws the first attempt by weight, and the others follow in their order", () => {
    const r = rule([target("a", 1), target("b", 0), target("c", 3), target("d")]);
    // Weights a 1, c 3 (b and d: 0): [0, 0.25) is a, [0.25, 1) is c.
    expect(names(config, r, responses(() => 0))).toEqual(["a:m", "b:m", "c:m", "d:m"]);
    expect(names(config, r, responses(() => 0.2499))).toEqual(["a:m", "b:m", "c:m", "d:m"]);
    expect(names(config, r, responses(() => 0.25))).toEqual(["c:m", "a:m", "b:m", "d:m"]);
    expect(names(config, r, responses(() => 0.9999999))).toEqual(["c:m", "a:m", "b:m", "d:m"]);
    // A random() of 1 (out of its range) still picks a weighted target.
    expect(names(config, r, responses(() => 1))).toEqual(["c:m", "a:m", "b:m", "d:m"]);
  });

  it("never draws a target weighted 0, or one without a weight, first; they stay as fallbacks", () => {
    const r = rule([target("a", 0), target("b"), target("c", 5), target("d", 0)]);
    const firsts = new Set<string>();
    const random = seeded(7);
    for (let i = 0; i < 1000; i++) firsts.add(names(config, r, responses(random))[0]!);
    expect([...firsts]).toEqual(["c:m"]);
    expect(names(config, r, responses(random))).toEqual(["c:m", "a:m", "b:m", "d:m"]);
  });

  /** The share of first attempts per target over `draws` calls. */
  function firstShares(r: RoutingRule, random: () => number, draws: number): Record<string, number> {
    const counts: Record<string, number> = {};
    for (let i = 0; i < draws; i++) {
      const first = names(config, r, responses(random))[0]!;
      counts[first] = (counts[first] ?? 0) + 1;
    }
    return Object.fromEntries(Object.entries(counts).map(([name, n]) => [name, n / draws]));
  }

  const split = { "a:m": 0.7, "b:m": 0.2, "c:m": 0.1 };
  const weighted = () => rule([target("a", 700), target("b", 200), target("c", 100), target("d", 0)]);

  it("spreads 10,000 seeded draws within 2 points of the weights", () => {
    const shares = firstShares(weighted(), seeded(20261124), 10_000);
    expect(Object.keys(shares).sort()).toEqual(["a:m", "b:m", "c:m"]);
    for (const [name, share] of Object.entries(split)) expect(Math.abs(shares[name]! - share), name).toBeLessThanOrEqual(0.02);
  });

  it("spreads 10,000 draws of Math.random within a bound that fails less than once in a million runs", () => {
    // Chernoff: P(|share − p| ≥ ε) ≤ e^(−n·KL(p+ε‖p)) + e^(−n·KL(p−ε‖p)), summed over the targets
    // (a union bound). Two points is not enough at 10,000 draws: about 1e-5 for p = 0.7 alone.
    const n = 10_000;
    const kl = (q: number, p: number) => q * Math.log(q / p) + (1 - q) * Math.log((1 - q) / (1 - p));
    const failure = (epsilon: number) =>
      Object.values(split).reduce((sum, p) => sum
        + (p + epsilon < 1 ? Math.exp(-n * kl(p + epsilon, p)) : 0)
        + (p - epsilon > 0 ? Math.exp(-n * kl(p - epsilon, p)) : 0), 0);
    let epsilon = 0.02;
    while (failure(epsilon) >= 1e-6) epsilon += 0.0001;
    expect(failure(0.02)).toBeGreaterThan(1e-6);
    expect(epsilon).toBeLessThan(0.026);
    const shares = firstShares(weighted(), Math.random, n);
    for (const [name, share] of Object.entries(split)) expect(Math.abs(shares[name]! - share), name).toBeLessThan(epsilon);
    expect(shares["d:m"]).toBeUndefined();
  });

  it("leaves out targets whose provider is missing, has no key, or cannot serve the endpoint", () => {
    const mixed = workspace([provider("ok1"), provider("nokey", "openai", null), provider("claude", "anthropic"), provider("ok2", "azure_openai")]);
    const r = rule([target("ghost"), target("nokey"), target("claude"), target("ok2", null, "dep"), target("ok1")]);
    const embeddings: CandidateOptions = { endpoint: "embeddings", serves: (kind) => endpointSpecs.embeddings.target(kind) !== undefined, random: () => 0 };
    expect(names(mixed, r, embeddings)).toEqual(["ok2:dep", "ok1:m"]);
    // The predicate decides what serves: with translation, every kind serves chat.
    const chat: CandidateOptions = { endpoint: "chat", serves: (kind) => endpointSpecs.chat.target(kind) !== undefined, random: () => 0 };
    expect(names(mixed, r, chat)).toEqual(["claude:m", "ok2:dep", "ok1:m"]);
    // Weighted targets that are left out are not drawn: the order is the others' own.
    const weightedOut = rule([target("ghost", 5), target("nokey", 5), target("ok1", 0), target("ok2")]);
    expect(names(mixed, weightedOut, responses(() => 0.5))).toEqual(["ok1:m", "ok2:m"]);
  });

  it("answers the first target's error when no target is left, as resolveRoute always has", () => {
    const kinds = workspace([
      provider("nokey", "openai", null),
      provider("claude", "anthropic"),
      provider("gpt", "openai"),
      provider("local", "openai_compatible"),
    ]);
    const embeddings: CandidateOptions = { endpoint: "embeddings", serves: (kind) => endpointSpecs.embeddings.target(kind) !== undefined, random: Math.random };
    const images: CandidateOptions = { endpoint: "images", serves: (kind) => endpointSpecs.images.target(kind) !== undefined, random: Math.random };
    const cases: [RoutingRule, CandidateOptions, string][] = [
      [rule([target("ghost")]), responses(), "Provider 'ghost' is not configured. A routing rule targets it: create the provider or change the rule's target."],
      [rule([target("nokey")]), responses(), "No API key is configured for provider 'nokey'. An administrator must store one."],
      [rule([target("claude")]), embeddings, "The routing rule for this request targets provider 'claude' (Anthropic), which does not serve embeddings. Point the rule at an OpenAI, Azure OpenAI or OpenAI-compatible provider."],
      [rule([target("local")]), images, "The routing rule for this request targets provider 'local' (OpenAI-compatible), which does not serve image generation. Point the rule at an OpenAI or Azure OpenAI provider."],
      [rule([target("gpt")], ["text-embedding-*", "m"]), embeddings, "The routing rule for this request targets provider 'gpt' by model name, and embeddings cannot be routed by model. Add a routing rule that lists no models and targets an OpenAI or Azure OpenAI provider."],
      // Several targets, none left: the first one's error, whatever the others' are.
      [rule([target("ghost"), target("nokey"), target("claude")]), embeddings, "Provider 'ghost' is not configured. A routing rule targets it: create the provider or change the rule's target."],
      [rule([target("nokey"), target("ghost")]), responses(), "No API key is configured for provider 'nokey'. An administrator must store one."],
      [rule([target("claude", 1), target("nokey", 1)], []), embeddings, "The routing rule for this request targets provider 'claude' (Anthropic), which does not serve embeddings. Point the rule at an OpenAI, Azure OpenAI or OpenAI-compatible provider."],
      // Embeddings by a rule with models: no target serves, even a fit one.
      [rule([target("ghost"), target("gpt")], ["m*"]), embeddings, "Provider 'ghost' is not configured. A routing rule targets it: create the provider or change the rule's target."],
    ];
    for (const [r, options, message] of cases) {
      expect(errorOf(kinds, r, options)).toEqual({ status: 503, message });
      // resolveRoute answers the same for the rule, given the same predicate.
      const spec = { name: options.endpoint, target: (kind: ProviderKind) => (options.serves(kind) ? { path: "/v1/x", format: null } : undefined) };
      const route = resolveRoute(workspace([...kinds.providersByName.values()], [r]), "m", spec);
      expect(route.ok ? "routed" : route.error.message).toBe(message);
    }
  });

  it("resolveRoute: the first matching rule and its attempts", () => {
    const cfg = workspace([provider("claude", "anthropic"), provider("gpt"), provider("backup")], [
      rule([target("claude", null, "claude-up")], ["claude-*"]),
      rule([target("ghost"), target("gpt"), target("backup")]),
    ]);
    const claude = resolveRoute(cfg, "claude-x", endpointSpecs.messages);
    expect(claude.ok && [claude.attempts[0]!.provider.name, claude.attempts[0]!.upstreamModel, claude.rule.id]).toEqual(["claude", "claude-up", cfg.routingRules[0]!.id]);
    const fallback = resolveRoute(cfg, "gpt-x", endpointSpecs.responses);
    expect(fallback.ok && fallback.attempts.map((a) => [a.provider.name, a.upstreamModel])).toEqual([["gpt", "gpt-x"], ["backup", "gpt-x"]]);
    // An endpoint spec does as well: chat reaches the Anthropic provider by translation.
    const chat = resolveRoute(cfg, "claude-x", endpointSpecs.chat);
    expect(chat.ok && chat.attempts[0]!.provider.name).toBe("claude");
    const images = resolveRoute(cfg, "claude-x", endpointSpecs.images);
    expect(images.ok ? "routed" : images.error.message).toBe(
      "The routing rule for this request targets provider 'claude' (Anthropic), which does not serve image generation. Point the rule at an OpenAI or Azure OpenAI provider.",
    );
    const none = resolveRoute(workspace([], []), "x", endpointSpecs.responses);
    expect(none.ok ? "routed" : none.error.message).toBe("No routing rule resolves requests for model 'x'. Add a routing rule that matches it, or one that lists no models.");
    expect(resolveRoute(undefined, "x", endpointSpecs.responses).ok).toBe(false);
  });

  it("skips providers cooling down, unless every target is: then all, in their order", () => {
    let now = 0;
    const cooldown = new Cooldown({ now: () => now });
    const r = rule([target("a"), target("b"), target("c")]);
    const options = (random = () => 0): CandidateOptions => ({ ...responses(random), cooldown });
    cooldown.failed("id-a", { status: 429, retryAfterSeconds: 10 });
    expect(names(config, r, options())).toEqual(["b:m", "c:m"]);
    cooldown.failed("id-c", { status: 429 });
    expect(names(config, r, options())).toEqual(["b:m"]);
    cooldown.failed("id-b", { status: 429, retryAfterSeconds: 5 });
    expect(names(config, r, options())).toEqual(["a:m", "b:m", "c:m"]);
    now = 1000; // c is back
    expect(names(config, r, options())).toEqual(["c:m"]);
    now = 10_000; // all are
    expect(names(config, r, options())).toEqual(["a:m", "b:m", "c:m"]);

    // Weighted: the draw is among the providers that are not cooling.
    const w = rule([target("a", 9), target("b", 1), target("c", 0)]);
    cooldown.failed("id-a", { status: 429, retryAfterSeconds: 60 });
    expect(names(config, w, options(() => 0))).toEqual(["b:m", "c:m"]);
    cooldown.failed("id-b", { status: 429, retryAfterSeconds: 60 });
    expect(names(config, w, options(() => 0))).toEqual(["c:m"]);
    cooldown.failed("id-c", { status: 429, retryAfterSeconds: 60 });
    // All cooling: the normal order, draw included.
    expect(names(config, w, options(() => 0.95))).toEqual(["b:m", "a:m", "c:m"]);
    expect(names(config, w, options(() => 0.5))).toEqual(["a:m", "b:m", "c:m"]);
    // A target left out for another reason stays out.
    const withGhost = rule([target("ghost"), target("a")]);
    expect(names(config, withGhost, options())).toEqual(["a:m"]);
  });
});

// ---- the cooldown -------------------------------------------------------------------------

describe("the cooldown", () => {
  function clock() {
    const state = { now: 1_700_000_000_000 };
    return { state, cooldown: new Cooldown({ now: () => state.now }) };
  }

  it("honours a 429's Retry-After to the millisecond", () => {
    const { state, cooldown } = clock();
    const start = state.now;
    cooldown.failed("p", { status: 429, retryAfterSeconds: 7 });
    expect(cooldown.isCooling("p")).toBe(true);
    expect(cooldown.coolingUntil("p")).toBe(start + 7000);
    state.now = start + 6999;
    expect(cooldown.isCooling("p")).toBe(true);
    state.now = start + 7000;
    expect(cooldown.isCooling("p")).toBe(false);
    expect(cooldown.coolingUntil("p")).toBeUndefined();
    // Another provider is not affected.
    state.now = start;
    expect(cooldown.isCooling("q")).toBe(false);
  });

  it("caps Retry-After at 300 s, and cools 1 s for a 429 without one", () => {
    const { state, cooldown } = clock();
    const start = state.now;
    cooldown.failed("capped", { status: 429, retryAfterSeconds: 86_400 });
    cooldown.failed("bare", { status: 429 });
    cooldown.failed("zero", { status: 429, retryAfterSeconds: 0 });
    cooldown.failed("nan", { status: 429, retryAfterSeconds: Number.NaN });
    expect(cooldown.isCooling("zero")).toBe(false);
    state.now = start + 999;
    expect([cooldown.isCooling("bare"), cooldown.isCooling("nan")]).toEqual([true, true]);
    state.now = start + 1000;
    expect([cooldown.isCooling("bare"), cooldown.isCooling("nan")]).toEqual([false, false]);
    state.now = start + 299_999;
    expect(cooldown.isCooling("capped")).toBe(true);
    state.now = start + 300_000;
    expect(cooldown.isCooling("capped")).toBe(false);
  });

  it("skips a provider for 30 s from its third failure in a row; a success starts the count again", () => {
    const { state, cooldown } = clock();
    const start = state.now;
    cooldown.failed("p"); // a connection failure
    cooldown.failed("p", { status: 502 });
    expect(cooldown.isCooling("p")).toBe(false);
    cooldown.succeeded("p");
    cooldown.failed("p", { status: 500 });
    cooldown.failed("p");
    expect(cooldown.isCooling("p")).toBe(false);
    // 429s are not failures of this kind.
    cooldown.failed("p", { status: 429, retryAfterSeconds: 0 });
    expect(cooldown.isCooling("p")).toBe(false);
    state.now = start + 5000;
    cooldown.failed("p", { status: 503 });
    expect(cooldown.isCooling("p")).toBe(true);
    state.now = start + 5000 + 29_999;
    expect(cooldown.isCooling("p")).toBe(true);
    state.now = start + 35_000;
    expect(cooldown.isCooling("p")).toBe(false);
    // Still failing once its 30 s are over: skipped again after one more failure.
    cooldown.failed("p");
    expect(cooldown.coolingUntil("p")).toBe(start + 65_000);
    // A success ends it, and the count starts again.
    cooldown.succeeded("p");
    expect(cooldown.isCooling("p")).toBe(false);
    cooldown.failed("p");
    cooldown.failed("p");
    expect(cooldown.isCooling("p")).toBe(false);
    cooldown.failed("p");
    expect(cooldown.isCooling("p")).toBe(true);
  });

  it("keeps a 429's wait through a success, and the longer of two waits", () => {
    const { state, cooldown } = clock();
    const start = state.now;
    cooldown.failed("p", { status: 429, retryAfterSeconds: 20 });
    cooldown.failed("p", { status: 429, retryAfterSeconds: 2 });
    cooldown.succeeded("p");
    state.now = start + 19_999;
    expect(cooldown.isCooling("p")).toBe(true);
    state.now = start + 20_000;
    expect(cooldown.isCooling("p")).toBe(false);
    cooldown.succeeded("never-failed");
    expect(cooldown.isCooling("never-failed")).toBe(false);
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-11-24T12:00:00Z");
    expect(parseRetryAfter("7", now)).toBe(7);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
    expect(parseRetryAfter(["12", "3"], now)).toBe(12);
    expect(parseRetryAfter("Tue, 24 Nov 2026 12:00:30 GMT", now)).toBe(30);
    expect(parseRetryAfter("Tue, 24 Nov 2026 11:00:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter("-5", now)).toBeUndefined();
    expect(parseRetryAfter("", now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
