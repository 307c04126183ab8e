import { Buffer } from "node:buffer";
import http from "node:http";
import type { Registry } from "prom-client";
import type { AddressInfo } from "node:net";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { DatabaseDeadlines } from "../db/deadlines.ts";
import type { Logger } from "../platform/logger.ts";
import type { Tracing } from "../platform/tracing.ts";
import { drainConnections } from "../platform/drain.ts";
import { http1Timeouts, type ConnectionTimeouts } from "../platform/server.ts";
import type { SecretBox } from "./config/secrets.ts";
import { loadSnapshot } from "./config/snapshot.ts";
import { ConfigWatcher } from "./config/watcher.ts";
import { createGatewayHandler } from "./dataplane/pipeline.ts";
import { UpstreamRegistry } from "./dataplane/upstreams.ts";
import { DetectorLoader, type DetectorSources } from "./guardrails/detectors/loader.ts";
import type { GuardrailLimits } from "./guardrails/guardrail-limits.ts";
import { createGuardrailStep } from "./guardrails/guardrails.ts";
import { createRequestBodies } from "./guardrails/request-bodies.ts";
import { WorkerPool } from "./guardrails/worker-pool.ts";
import { createLimitStep } from "./limits/limit-step.ts";
import type { Slices } from "./limits/slices.ts";
import { RequestLog } from "./usage/request-log.ts";
import { GatewayMetrics } from "./usage/metrics.ts";
import { TrafficRows, type PipelineSink } from "./usage/traffic-rows.ts";
import { standInTranscript } from "./guardrails/text.ts";

export interface GatewayOptions {
  orm: MikroORM;
  databaseUrl: string;
  secrets: SecretBox;
  logger: Logger;
  port: number;
  host: string;
  maxBodyBytes: number;
  defaultMaxInFlight: number;
  keyLookupTimeoutMs: number;
  httpTimeouts: ConnectionTimeouts;
  databaseDeadlines: DatabaseDeadlines;
  requestLogRetentionDays: number;
  /** Where the guardrail detectors read their data; the bundled files unless a test holds them. */
  detectorSources?: DetectorSources;
  /** The usage limits' budgets, as this process's slices of them. */
  counters: Slices;
  defaultMaxTokens: number;
  guardrailLimits: GuardrailLimits;
  /**
   * Stores rows of an inference pipeline (the row store's data-stream path), for the traffic of
   * keys bound to one. Without it, such rows are dropped and counted.
   */
  pipelineSink?: PipelineSink;
  /** The process's Prometheus registry: the gateway's metrics join it, and its listener serves it at /metrics. */
  metrics: Registry;
  /** Whether each request is recorded in the gateway's metrics (WARDEN_GATEWAY_METRICS). */
  recordMetrics: boolean;
  /** One info line per request (docs/operations.md, "Logs"); /healthz, /readyz and /metrics are not logged. */
  accessLog: boolean;
  /** Answer with a Server-Timing header: the gateway's own time per step. */
  serverTiming: boolean;
  /** Spans of every request, when tracing is on. */
  tracing?: Tracing;
}

export interface Gateway {
  port: number;
  watcher: ConfigWatcher;
  requestLog: RequestLog;
  /** The traffic of keys bound to an inference pipeline, as its rows. */
  pipelineRows: TrafficRows;
  detectors: DetectorLoader;
  /** Stops taking requests, lets those in flight finish for up to `drainMs` (0: cut them), then closes everything. */
  stop(drainMs?: number): Promise<void>;
}

/** The data plane: a plain HTTP listener over this process's snapshot of the configuration. */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const logger = options.logger.child({ component: "gateway" });
  const watcher = await ConfigWatcher.start({
    databaseUrl: options.databaseUrl,
    load: (version) => loadSnapshot({ orm: options.orm, secrets: options.secrets, defaultMaxInFlight: options.defaultMaxInFlight, logger }, version),
    logger,
    keyLookupTimeoutMs: options.keyLookupTimeoutMs,
    deadlines: options.databaseDeadlines,
  });
  // Loads in the background: the gateway serves at once, and a request that needs a detector
  // still loading gets the spec's 503 "still loading".
  const detectors = new DetectorLoader(options.detectorSources);
  detectors.ready.then(
    () => logger.info("guardrail detectors loaded"),
    (err: unknown) => logger.error({ err }, "guardrail detectors failed to load"),
  );
  // Large bodies are read and long texts checked off the event loop, so that one large prompt
  // cannot stall the process.
  const workers = new WorkerPool({
    size: options.guardrailLimits.workers,
    queueLimit: options.guardrailLimits.queueLimit,
    deadlineMs: options.guardrailLimits.timeoutMs,
    data: detectors.data,
    logger,
  });
  const upstreams = new UpstreamRegistry();
  const requestLog = new RequestLog({ databaseUrl: options.databaseUrl, deadlines: options.databaseDeadlines, logger, retentionDays: options.requestLogRetentionDays });
  const pipelineRows = new TrafficRows({ sink: options.pipelineSink, logger, transcriptOfStandIn: standInTranscript });
  const metrics = options.recordMetrics
    ? new GatewayMetrics(options.metrics, { requestLog: () => requestLog.buffered, pipelineRows: () => pipelineRows.buffered })
    : undefined;
  const handle = createGatewayHandler({
    watcher,
    upstreams,
    usage: createLimitStep({ slices: options.counters, defaultMaxTokens: options.defaultMaxTokens }),
    guardrails: createGuardrailStep({
      loader: detectors,
      logger,
      maxTextBytes: options.guardrailLimits.maxTextBytes,
      pool: workers,
      streamWindowChars: options.guardrailLimits.streamWindowChars,
      cacheEntries: options.guardrailLimits.cacheEntries,
    }),
    bodies: createRequestBodies({ workers, maxTextBytes: options.guardrailLimits.maxTextBytes }),
    requestLog,
    traffic: pipelineRows,
    logger,
    maxBodyBytes: options.maxBodyBytes,
    defaultMaxTokens: options.defaultMaxTokens,
    metrics,
    accessLog: options.accessLog,
    serverTiming: options.serverTiming,
    tracing: options.tracing,
  });
  // A client slow to send its headers or its body, or idle, is let go; a slow provider or a long
  // stream is not: none of these bounds the response.
  const server = http.createServer(http1Timeouts(options.httpTimeouts), (req, res) => {
    if (req.method === "GET" && (req.url === "/readyz" || req.url === "/healthz")) {
      // Alive as long as it answers; ready once every detector has loaded.
      const alive = req.url === "/healthz";
      const ready = detectors.state === "ready";
      const body = JSON.stringify({ status: alive ? "ok" : ready ? "ready" : detectors.state });
      res.writeHead(alive || ready ? 200 : 503, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (req.method === "GET" && req.url === "/metrics") {
      options.metrics.metrics().then(
        (text) => {
          res.writeHead(200, { "content-type": options.metrics.contentType, "content-length": Buffer.byteLength(text) });
          res.end(text);
        },
        (err: unknown) => {
          logger.error({ err }, "metrics could not be collected");
          res.writeHead(500).end();
        },
      );
      return;
    }
    handle(req, res);
  });
  let openConnections = 0;
  server.on("connection", (socket) => {
    openConnections += 1;
    socket.once("close", () => (openConnections -= 1));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, "model gateway listening");
  return {
    port,
    watcher,
    requestLog,
    pipelineRows,
    detectors,
    async stop(drainMs = 0) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      await drainConnections(server, () => openConnections, drainMs);
      await closed;
      await upstreams.close();
      await workers.stop();
      await requestLog.close();
      await pipelineRows.close();
      await watcher.stop();
    },
  };
}
