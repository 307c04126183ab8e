/**
 * Rows in: rows per second through REST data-stream, in batches of 100 and of 1,000, against the
 * same batches handed to the ingestion in process (RowIngest.streamTo: no HTTP, no JSON), side by
 * side in one run. The rows are shaped as the TypeScript tracer sends them (one LLM step each).
 */
import { randomUUID } from "node:crypto";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { DataConfigSchema } from "../gen/warden/pipelines/v1/data_pb.js";
import { restClient } from "./clients.ts";
import { burst, latencyStats, type Door } from "./measure.ts";
import { machine } from "./report.ts";
import { startBenchServer } from "./server.ts";

export interface IngestBenchOptions {
  scale: number;
  log: (message: string) => void;
}

const config = {
  outputColumnName: "output",
  inputVariableNames: ["question"],
  groundTruthColumnName: "groundTruth",
  latencyColumnName: "latency",
  costColumnName: "cost",
  timestampColumnName: "inferenceTimestamp",
  inferenceIdColumnName: "inferenceId",
  numOfTokenColumnName: "tokens",
};

/** One traced call, as the TypeScript SDK's tracer posts it; every row gets a new inference ID. */
function tracedRow(now: number): JsonObject {
  const id = randomUUID();
  return {
    inferenceTimestamp: now,
    inferenceId: id,
    output: "The capital of France is Paris.",
    groundTruth: null,
    latency: 812.4,
    cost: 0.00021,
    tokens: 42,
    question: "What is the capital of France?",
    metadata: {},
    steps: [{
      name: "OpenAI Chat Completion", id, type: "chat_completion",
      inputs: { prompt: [{ role: "user", content: "What is the capital of France?" }] },
      output: "The capital of France is Paris.", groundTruth: null, metadata: {}, steps: [], latency: 790.4,
      startTime: now * 1000, endTime: now * 1000 + 790, provider: "OpenAI", promptTokens: 30, completionTokens: 12,
      tokens: 42, cost: 0.00021, model: "gpt-4o-mini-2024-07-18", modelParameters: { temperature: 1, top_p: 1, n: 1 },
    }],
  };
}

function batchOf(size: number): JsonObject[] {
  const now = Math.floor(Date.now() / 1000);
  return Array.from({ length: size }, () => tracedRow(now));
}

interface Result {
  door: string;
  batch: number;
  rowsPerSecond: number;
  p50: number;
  p99: number;
}

export async function runIngestBench(options: IngestBenchOptions): Promise<string> {
  const { log } = options;
  const server = await startBenchServer();
  const concurrency = 8;
  const results: Result[] = [];
  try {
    const http = restClient(server.baseUrl, server.adminKey, concurrency);
    const project = await http.call("POST", "/v1/projects", { name: "bench ingest", taskType: "llm-base" });
    const projectId = (project.body as { id: string }).id;
    const pipeline = async (name: string): Promise<string> => {
      const res = await http.call("POST", `/v1/projects/${projectId}/inference-pipelines`, { name, description: null });
      return (res.body as { id: string }).id;
    };
    const protoConfig = create(DataConfigSchema, config);
    for (const batch of [100, 1000]) {
      const calls = Math.max(4, Math.round(((batch === 100 ? 600 : 80) * options.scale)));
      const restPipeline = await pipeline(`rest-${batch}`);
      const directPipeline = await pipeline(`direct-${batch}`);
      const target = { id: directPipeline, workspaceId: "", projectId, taskType: "llm-base" as const };
      const latencies = new Map<string, number[]>();
      const timed = (name: string, send: () => Promise<void>): Door => ({
        name,
        async call() {
          const start = performance.now();
          await send();
          const into = latencies.get(name) ?? [];
          into.push(performance.now() - start);
          latencies.set(name, into);
        },
      });
      const doors: Door[] = [
        timed("REST data-stream (undici)", async () => {
          const res = await http.call("POST", `/v1/inference-pipelines/${restPipeline}/data-stream`, { config, rows: batchOf(batch) });
          if (res.status !== 200) throw new Error(`data-stream answered ${res.status}: ${JSON.stringify(res.body)}`);
        }),
        timed("in process (RowIngest)", async () => {
          await server.app.ingest.streamTo(target, protoConfig, batchOf(batch));
        }),
      ];
      // A warm-up, then two interleaved rounds per door.
      for (const door of doors) await burst(door, Math.max(2, Math.round(calls / 10)), concurrency);
      latencies.clear();
      const elapsed = new Map<string, number>();
      for (let round = 0; round < 2; round++) {
        for (const door of round === 0 ? doors : [...doors].reverse()) {
          log(`ingest: ${door.name}, batches of ${batch}, round ${round + 1}`);
          elapsed.set(door.name, (elapsed.get(door.name) ?? 0) + (await burst(door, calls, concurrency)));
        }
      }
      for (const door of doors) {
        const stats = latencyStats(latencies.get(door.name) ?? []);
        const ms = elapsed.get(door.name) ?? 1;
        results.push({ door: door.name, batch, rowsPerSecond: (2 * calls * batch * 1000) / ms, p50: stats.p50, p99: stats.p99 });
      }
    }
    await http.close();
  } finally {
    await server.stop();
  }
  const m = machine();
  const lines = [
    "## Rows in: data-stream",
    "",
    `${new Date().toISOString().slice(0, 10)}, ${m.cpu}, ${m.cores} cores, ${m.memoryGiB.toFixed(0)} GiB, Node ${m.node}, PostgreSQL ${server.postgresVersion} (${server.databaseKind}).`,
    `Rows shaped as the TypeScript tracer sends them (one LLM step, about 1 KB of JSON each), ${concurrency} batches in flight, client and server in one process.`,
    "",
    "| door | rows per batch | rows/s | batch p50 (ms) | batch p99 (ms) |",
    "| --- | ---: | ---: | ---: | ---: |",
    ...results.map((r) => `| ${r.door} | ${r.batch} | ${Math.round(r.rowsPerSecond).toLocaleString("en-US")} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} |`),
  ];
  return lines.join("\n") + "\n";
}
