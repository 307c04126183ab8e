/**
 * Tests evaluated: the time to evaluate ten monitoring tests over one window of 1,000,000 rows,
 * and over one of 10,000 rows, side by side in one run, through POST /v1/tests/{id}/evaluate and
 * its durable task, as a user would (BENCH_ONLY=evaluation). The rows are written straight into
 * the row store with SQL (how they get there is the ingest section's business), shaped as traced
 * LLM calls: an output, a latency, a cost, tokens, a user, one output in a hundred with an email.
 */
import pg from "pg";
import { restClient, type RestClient } from "./clients.ts";
import { machine } from "./report.ts";
import { startBenchServer } from "./server.ts";

export interface EvaluationBenchOptions {
  scale: number;
  log: (message: string) => void;
}

const hour = 3600;
const config = { outputColumnName: "output", latencyColumnName: "latency", costColumnName: "cost", numOfTokenColumnName: "tokens", timestampColumnName: "t" };

const column = (value: string) => ({ name: "column_name", value });
/** The ten tests: what each measures, and where. */
const tests: { name: string; subtype: string; threshold: Record<string, unknown> }[] = [
  { name: "rowCount", subtype: "rowCount", threshold: { operator: ">", value: 0 } },
  { name: "nullRowCount (user)", subtype: "nullRowCount", threshold: { insightParameters: [column("user")] } },
  { name: "duplicateRowCount (output)", subtype: "duplicateRowCount", threshold: { insightParameters: [column("output")], operator: "<", value: 1e9 } },
  { name: "characterLength (mean)", subtype: "characterLength", threshold: { operator: "<", value: 100 } },
  { name: "sentenceLength (max)", subtype: "sentenceLength", threshold: { insightParameters: [{ name: "statistic", value: "max" }], operator: "<", value: 50 } },
  { name: "metricThreshold p90Latency", subtype: "metricThreshold", threshold: { measurement: "p90Latency", operator: "<", value: 5000 } },
  { name: "metricThreshold meanCost", subtype: "metricThreshold", threshold: { measurement: "meanCost", operator: "<", value: 1 } },
  { name: "metricThreshold totalTokens", subtype: "metricThreshold", threshold: { measurement: "totalTokens", operator: ">", value: 0 } },
  { name: "containsPii (email, output)", subtype: "containsPii", threshold: { measurement: "containsPIIRowCount", insightParameters: [{ name: "pii_type", value: ["EMAIL_ADDRESS"] }], operator: "<", value: 1e9 } },
  { name: "sqlQuery (slow calls)", subtype: "sqlQuery", threshold: { measurement: "result", insightParameters: [{ name: "query", value: "SELECT count(*) FROM df WHERE latency > 1500" }], operator: ">=", value: 0 } },
];

/** Writes `count` rows into one window of the pipeline, in SQL batches. */
async function fill(pool: pg.Pool, pipelineId: string, windowStart: number, count: number): Promise<void> {
  const batch = 100_000;
  for (let from = 0; from < count; from += batch) {
    await pool.query(
      `insert into inference_row (pipeline_id, inference_id, ts, output, latency_ms, cost, num_tokens, data)
       select $1, 'r' || g, to_timestamp($2::bigint + g % ${hour}), d ->> 'output', (d ->> 'latency')::float8, (d ->> 'cost')::float8, (d ->> 'tokens')::float8, d
         from generate_series($3::bigint, $4::bigint) g,
         lateral (select jsonb_build_object(
           'output', case when g % 100 = 0 then 'Write to user' || g || '@example.com for the answer.' else 'The answer to question ' || (g % 5000) || ' is Paris.' end,
           'latency', 200 + (g * 7919) % 2000, 'cost', 0.0001 * (1 + g % 7), 'tokens', 20 + g % 50,
           'user', case when g % 10 = 0 then null else 'u' || (g % 1000) end, 't', $2::bigint + g % ${hour}) d) x`,
      [pipelineId, windowStart, from, Math.min(from + batch, count) - 1],
    );
  }
  await pool.query("analyze inference_row");
}

async function queue(http: RestClient, testId: string, pipelineId: string, windowStart: number): Promise<string> {
  const queued = await http.call("POST", `/v1/tests/${testId}/evaluate`, {
    startTimestamp: windowStart, endTimestamp: windowStart + hour, inferencePipelineId: pipelineId, overwriteResults: true,
  });
  if (queued.status !== 200) throw new Error(`evaluate answered ${queued.status}: ${JSON.stringify(queued.body)}`);
  return (queued.body as { tasks: { taskResultId: string }[] }).tasks[0]!.taskResultId;
}

async function finished(http: RestClient, taskId: string): Promise<void> {
  for (;;) {
    const task = (await http.call("GET", `/v1/task-results/${taskId}`)).body as { status: string };
    if (task.status === "completed") return;
    if (task.status === "failed") throw new Error(`task ${taskId} failed`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** All ten queued at once, as the schedule queues a window's tests: the time until the last is done. */
async function evaluateAll(http: RestClient, testIds: readonly string[], pipelineId: string, windowStart: number): Promise<number> {
  const started = performance.now();
  const tasks: string[] = [];
  for (const id of testIds) tasks.push(await queue(http, id, pipelineId, windowStart));
  for (const task of tasks) await finished(http, task);
  return performance.now() - started;
}

async function evaluateOnce(http: RestClient, testId: string, pipelineId: string, windowStart: number): Promise<{ ms: number; status: string; message: string }> {
  const started = performance.now();
  await finished(http, await queue(http, testId, pipelineId, windowStart));
  const ms = performance.now() - started;
  const results = (await http.call("GET", `/v1/tests/${testId}/results?inferencePipelineId=${pipelineId}`)).body as { items: { status: string; statusMessage: string }[] };
  const result = results.items[0]!;
  return { ms, status: result.status, message: result.statusMessage };
}

export async function runEvaluationBench(options: EvaluationBenchOptions): Promise<string> {
  const { log } = options;
  const sizes = [10_000, Math.max(10_000, Math.round(1_000_000 * options.scale))];
  // The schedule stays out of the way: only the evaluations asked for run.
  const server = await startBenchServer(process.env, { settings: { WARDEN_EVALUATION_INTERVAL_MS: "3600000" } });
  const pool = new pg.Pool({ connectionString: server.databaseUrl, max: 2 });
  const rows: { size: number; test: string; ms: number; status: string; message: string }[] = [];
  const together = new Map<number, number>();
  try {
    const http = restClient(server.baseUrl, server.adminKey, 2);
    const projectId = ((await http.call("POST", "/v1/projects", { name: "bench evaluation", taskType: "llm-base" })).body as { id: string }).id;
    const windowStart = Math.floor(Date.now() / 1000 / hour) * hour - 2 * hour;
    const pipelines = new Map<number, string>();
    for (const size of sizes) {
      const id = ((await http.call("POST", `/v1/projects/${projectId}/inference-pipelines`, { name: `rows ${size}`, description: null })).body as { id: string }).id;
      // One row through data-stream makes the window's partition and keeps the pipeline's config.
      await http.call("POST", `/v1/inference-pipelines/${id}/data-stream`, { config, rows: [{ output: "first", latency: 1, cost: 0, tokens: 1, t: windowStart }] });
      log(`evaluation: writing ${size.toLocaleString("en-US")} rows`);
      await fill(pool, id, windowStart, size - 1);
      pipelines.set(size, id);
    }
    const ids: string[] = [];
    for (const test of tests) {
      const made = await http.call("POST", `/v1/projects/${projectId}/tests`, {
        name: test.name, description: null, type: "integrity", subtype: test.subtype, thresholds: [test.threshold], usesProductionData: true, evaluationWindow: hour,
      });
      if (made.status !== 201) throw new Error(`creating ${test.name} answered ${made.status}: ${JSON.stringify(made.body)}`);
      ids.push((made.body as { id: string }).id);
    }
    // A warm-up on the small window, then each size in turn, each test once.
    for (const id of ids) await evaluateOnce(http, id, pipelines.get(sizes[0]!)!, windowStart);
    for (const size of sizes) {
      log(`evaluation: all ten at once over ${size.toLocaleString("en-US")} rows`);
      together.set(size, await evaluateAll(http, ids, pipelines.get(size)!, windowStart));
      for (const [i, id] of ids.entries()) {
        log(`evaluation: ${tests[i]!.name} over ${size.toLocaleString("en-US")} rows`);
        rows.push({ size, test: tests[i]!.name, ...(await evaluateOnce(http, id, pipelines.get(size)!, windowStart)) });
      }
    }
    await http.close();
  } finally {
    await pool.end();
    await server.stop();
  }
  const m = machine();
  const total = (size: number) => rows.filter((r) => r.size === size).reduce((sum, r) => sum + r.ms, 0);
  const bySize = (size: number, test: string) => rows.find((r) => r.size === size && r.test === test)!;
  const [small, large] = sizes as [number, number];
  const lines = [
    "## Tests evaluated: ten monitoring tests over one window",
    "",
    `${new Date().toISOString().slice(0, 10)}, ${m.cpu}, ${m.cores} cores, ${m.memoryGiB.toFixed(0)} GiB, Node ${m.node}, PostgreSQL ${server.postgresVersion} (${server.databaseKind}).`,
    "Through POST /v1/tests/{id}/evaluate (overwriting), timed until the tasks are completed. First the ten queued at once, as the schedule queues a window's",
    "tests (a process runs two window tasks at a time); then each alone, which adds the queue's pick-up time to every test.",
    "",
    `| all ten queued at once | ${small.toLocaleString("en-US")} rows: **${together.get(small)!.toFixed(0)} ms** | ${large.toLocaleString("en-US")} rows: **${together.get(large)!.toFixed(0)} ms** |`,
    "| --- | ---: | ---: |",
    "",
    `| test | ${small.toLocaleString("en-US")} rows (ms) | ${large.toLocaleString("en-US")} rows (ms) | result over ${large.toLocaleString("en-US")} rows |`,
    "| --- | ---: | ---: | --- |",
    ...tests.map((t) => {
      const a = bySize(small, t.name);
      const b = bySize(large, t.name);
      return `| ${t.name} | ${a.ms.toFixed(0)} | ${b.ms.toFixed(0)} | ${b.status}: ${b.message.replaceAll("|", "\\|")} |`;
    }),
    `| sum of the ten alone | ${total(small).toFixed(0)} | ${total(large).toFixed(0)} | |`,
  ];
  return lines.join("\n") + "\n";
}
