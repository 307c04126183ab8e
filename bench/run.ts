/**
 * Eleven sections, in one run (see docs/performance.md):
 *
 * 1. REST /v1 (the facade) against a direct Connect call, for the same operations. Warden runs in
 *    this process over a database of its own.
 * 2. The model gateway against a bare undici proxy and direct calls to a fake provider, each in a
 *    process of its own (bench/gateway/).
 * 3. What guardrails and usage limits cost the gateway per request, each against the same gateway
 *    with the feature off (bench/gateway/costs.ts).
 * 4. Rows in: data-stream's rows per second, against the same ingestion called in process (bench/ingest.ts).
 * 5. What tracing costs the gateway: a key bound to an inference pipeline against one bound to
 *    none, through the same gateway process (bench/gateway/traffic.ts; BENCH_ONLY=gateway-traffic).
 * 6. Tests evaluated: ten monitoring tests over a window of 1,000,000 rows and of 10,000
 *    (bench/evaluation.ts; BENCH_ONLY=evaluation).
 * 7. What translation costs the gateway: chat completions, and an Anthropic messages client calling an
 *    OpenAI-style provider (plain and streamed), side by side with pass-through and the bare proxy,
 *    and the CPU of translation per call in process (bench/gateway/translation.ts;
 *    BENCH_ONLY=gateway-translation).
 * 8. What metrics and the access log cost the gateway: GatewayMetrics.started/ended and one
 *    access-log line per request in process, and the gateway with WARDEN_ACCESS_LOG=true against
 *    false side by side, metrics on in both (bench/gateway/observability.ts;
 *    BENCH_ONLY=gateway-observability).
 * 9. What guardrails cost at each stage (input, output, streamed output), each against the same
 *    request with none, at c=1 (bench/gateway/guardrail-stages.ts; BENCH_ONLY=gateway-guardrail-stages).
 * 10. The gateway with every check on (guardrails, usage limits in PostgreSQL and in Redis, both),
 *    side by side with the bare proxy and direct calls, short and 20-turn prompts, plain and
 *    streamed (bench/gateway/checks.ts; BENCH_ONLY=gateway-checks).
 * 11. The tail at 1,000 requests/s with everything on: the gateway with V8's helper pool sized to
 *    its cores (as `npm run gateway` starts it) and with Node's default, beside the bare proxy;
 *    then what the bare proxy and the gateway allocate per call, and where
 *    (bench/gateway/tails.ts; BENCH_ONLY=gateway-tails).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench
 *
 * The report (Markdown) goes to stdout, progress to stderr. BENCH_SCALE (default 1) scales the
 * number of requests (and the evaluation section's large window); BENCH_ONLY=rest, gateway, gateway-costs,
 * ingest, gateway-traffic, evaluation, gateway-translation, gateway-observability,
 * gateway-guardrail-stages, gateway-checks or gateway-tails runs one section.
 */
import { TaskType } from "../gen/warden/projects/v1/projects_pb.js";
import { listResponseCodecCost, responseSizes, type CodecCost, type ResponseSizes } from "./codec-cost.ts";
import { connectClient, restClient, type ConnectClient, type RestClient } from "./clients.ts";
import { runGatewayChecksBench } from "./gateway/checks.ts";
import { runGatewayTailsBench } from "./gateway/tails.ts";
import { runGatewayCostsBench } from "./gateway/costs.ts";
import { runGatewayObservabilityBench } from "./gateway/observability.ts";
import { runGuardrailStagesBench } from "./gateway/guardrail-stages.ts";
import { runGatewayBench } from "./gateway/run.ts";
import { runGatewayTrafficBench } from "./gateway/traffic.ts";
import { runGatewayTranslationBench } from "./gateway/translation.ts";
import { runEvaluationBench } from "./evaluation.ts";
import { runIngestBench } from "./ingest.ts";
import { burst, concurrentThroughput, latencyStats, sequentialLatencies, type Door } from "./measure.ts";
import { machine, markdownReport, type OperationResult } from "./report.ts";
import { startBenchServer } from "./server.ts";

const scale = Number(process.env.BENCH_SCALE ?? "1");
if (!(scale > 0)) throw new Error(`BENCH_SCALE must be a positive number, got "${process.env.BENCH_SCALE}"`);
const count = (n: number): number => Math.max(1, Math.round(n * scale));
const only = process.env.BENCH_ONLY ?? "";
const sections = ["rest", "gateway", "gateway-costs", "ingest", "gateway-traffic", "evaluation", "gateway-translation", "gateway-observability", "gateway-guardrail-stages", "gateway-checks", "gateway-tails"];
if (only !== "" && !sections.includes(only)) throw new Error(`BENCH_ONLY must be one of ${sections.map((s) => `"${s}"`).join(", ")}, got "${only}"`);

const seedProjects = 100;
const concurrency = 16;
/** Per door and operation. */
const plan = {
  warmup: count(200),
  latency: count(600),
  throughput: count(1200),
  rounds: 4,
  codecIterations: count(400),
};

const rest = "REST (undici)";
const binary = "Connect binary";
const json = "Connect JSON";
const gzip = "Connect binary + gzip";

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`unexpected answer: ${message}`);
}

function itemsOf(body: unknown): unknown[] | undefined {
  if (typeof body !== "object" || body === null || !("items" in body)) return undefined;
  return Array.isArray(body.items) ? body.items : undefined;
}

function idOf(body: unknown): unknown {
  return typeof body === "object" && body !== null && "id" in body ? body.id : undefined;
}

let nameSeq = 0;
const uniqueName = (prefix: string): string => `bench-${prefix}-${++nameSeq}`;

type NamedClient = { name: string; client: ConnectClient };

function listDoors(restClient: RestClient, connect: NamedClient[]): Door[] {
  return [
    {
      name: rest,
      async call() {
        const response = await restClient.call("GET", `/v1/projects?perPage=${seedProjects}`);
        check(response.status === 200, `GET /v1/projects: ${response.status}`);
        check(itemsOf(response.body)?.length === seedProjects, "GET /v1/projects: not a full page");
      },
    },
    ...connect.map(({ name, client }): Door => ({
      name,
      async call() {
        const response = await client.projects.listProjects({ perPage: seedProjects });
        check(response.items.length === seedProjects, "ListProjects: not a full page");
      },
    })),
  ];
}

function createDoors(restClient: RestClient, connect: NamedClient[]): Door[] {
  return [
    {
      name: rest,
      async call() {
        const response = await restClient.call("POST", "/v1/projects", { name: uniqueName("rest"), taskType: "llm-base" });
        check(response.status === 201, `POST /v1/projects: ${response.status}`);
        check(typeof idOf(response.body) === "string", "POST /v1/projects: no id");
      },
    },
    ...connect.map(({ name, client }): Door => ({
      name,
      async call() {
        const response = await client.projects.createProject({ name: uniqueName(name.replace(/\W+/g, "-")), taskType: TaskType.LLM_BASE });
        check(typeof response.project?.id === "string", "CreateProject: no project");
      },
    })),
  ];
}

async function measure(operation: string, requests: Record<string, string>, doors: Door[]): Promise<OperationResult> {
  log(`${operation}: warm-up (${plan.warmup} sequential + ${plan.warmup} at c=${concurrency} per door)`);
  for (const door of doors) {
    for (let i = 0; i < plan.warmup; i++) await door.call();
    await burst(door, plan.warmup, concurrency);
  }
  log(`${operation}: latency, ${plan.latency} requests per door at c=1`);
  const latencies = await sequentialLatencies(doors, plan.latency, plan.rounds);
  log(`${operation}: throughput, ${plan.throughput} requests per door at c=${concurrency}`);
  const throughputs = await concurrentThroughput(doors, plan.throughput, plan.rounds, concurrency);
  return {
    operation,
    requests,
    baseline: binary,
    doors: doors.map((door) => {
      const throughput = throughputs.get(door.name);
      if (!throughput) throw new Error(`no throughput for ${door.name}`);
      return { door: door.name, latency: latencyStats(latencies.get(door.name) ?? []), throughput };
    }),
  };
}

/** The REST-vs-Connect section; prints its report. */
async function restSection(report: (text: string) => void): Promise<void> {
  const started = performance.now();
  const date = new Date();
  log(process.env.DATABASE_URL ? "starting Warden on a fresh database of DATABASE_URL's server" : "starting Warden on an embedded PostgreSQL");
  const server = await startBenchServer();
  const connect = (format: "binary" | "json", compression: boolean): ConnectClient =>
    connectClient(server.baseUrl, server.adminKey, { format, compression, maxSockets: concurrency });
  const clients: { rest: RestClient; connect: NamedClient[]; gzip: NamedClient } = {
    rest: restClient(server.baseUrl, server.adminKey, concurrency),
    connect: [
      { name: binary, client: connect("binary", false) },
      { name: json, client: connect("json", false) },
    ],
    // Only answers over 1 KiB are compressed, so this door differs from "Connect binary" on lists only.
    gzip: { name: gzip, client: connect("binary", true) },
  };
  const results: OperationResult[] = [];
  let codec: { costs: CodecCost[]; sizes: ResponseSizes; iterations: number } | undefined;
  try {
    log(`seeding ${seedProjects} projects`);
    const seeder = clients.connect[0].client.projects;
    for (let i = 0; i < seedProjects; i++) await seeder.createProject({ name: `seed-${i}`, taskType: TaskType.LLM_BASE });

    // The list runs first, while the workspace holds exactly the seeded projects.
    results.push(
      await measure(
        `List ${seedProjects} projects`,
        {
          [rest]: `GET /v1/projects?perPage=${seedProjects}`,
          [binary]: `ProjectService.ListProjects({perPage: ${seedProjects}})`,
          [json]: `ProjectService.ListProjects({perPage: ${seedProjects}})`,
          [gzip]: `ProjectService.ListProjects({perPage: ${seedProjects}}), accepting gzip (connect-node's default)`,
        },
        listDoors(clients.rest, [...clients.connect, clients.gzip]),
      ),
    );
    log(`serialisation of one list answer, ${plan.codecIterations} calls per step`);
    const sample = await seeder.listProjects({ perPage: seedProjects });
    codec = { costs: listResponseCodecCost(sample, plan.codecIterations), sizes: responseSizes(sample), iterations: plan.codecIterations };
    results.push(
      await measure(
        "Create a project",
        {
          [rest]: `POST /v1/projects {"name": "<unique>", "taskType": "llm-base"}`,
          [binary]: "ProjectService.CreateProject({name: <unique>, taskType: LLM_BASE})",
          [json]: "ProjectService.CreateProject({name: <unique>, taskType: LLM_BASE})",
        },
        createDoors(clients.rest, clients.connect),
      ),
    );
  } finally {
    await clients.rest.close();
    for (const { client } of [...clients.connect, clients.gzip]) client.close();
    log("stopping Warden and removing its database");
    await server.stop();
  }

  if (!codec) throw new Error("the serialisation costs were not measured");
  report(
    markdownReport({
      date,
      machine: machine(),
      database: `PostgreSQL ${server.postgresVersion} (${server.databaseKind === "embedded" ? "embedded" : "from DATABASE_URL"}), same host; Warden, its database pool and the clients share one Node process`,
      plan:
        `${seedProjects} projects seeded; per operation and door: ${plan.warmup}+${plan.warmup} warm-up, ` +
        `${plan.latency} requests at c=1, ${plan.throughput} at c=${concurrency}, each in ${plan.rounds} interleaved rounds`,
      results,
      codec,
      wallSeconds: (performance.now() - started) / 1000,
    }),
  );
}

async function main(): Promise<void> {
  const runs = (section: string): boolean => only === "" || only === section;
  let first = true;
  const report = (text: string): void => {
    process.stdout.write(first ? text : `\n${text}`);
    first = false;
  };
  if (runs("rest")) await restSection(report);
  if (runs("gateway")) report(await runGatewayBench({ scale, log }));
  if (runs("gateway-costs")) report(await runGatewayCostsBench({ scale, log }));
  if (runs("ingest")) report(await runIngestBench({ scale, log }));
  if (runs("gateway-traffic")) report(await runGatewayTrafficBench({ scale, log }));
  if (runs("evaluation")) report(await runEvaluationBench({ scale, log }));
  if (runs("gateway-translation")) report(await runGatewayTranslationBench({ scale, log }));
  if (runs("gateway-observability")) report(await runGatewayObservabilityBench({ scale, log }));
  if (runs("gateway-guardrail-stages")) report(await runGuardrailStagesBench({ scale, log }));
  if (runs("gateway-checks")) report(await runGatewayChecksBench({ scale, log }));
  if (runs("gateway-tails")) report(await runGatewayTailsBench({ scale, log }));
}

await main();
