import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { MikroORM } from "@mikro-orm/postgresql";
import type pg from "pg";
import type { SecretBox } from "./gateway/config/secrets.ts";
import type { CounterStore } from "./gateway/limits/types.ts";
import type { Config } from "./platform/config.ts";
import {
  authInterceptor,
  entityManagerInterceptor,
  errorInterceptor,
  nulCharacterInterceptor,
} from "./platform/interceptors.ts";
import { accessLogger, type Logger } from "./platform/logger.ts";
import type { Tracing } from "./platform/tracing.ts";
import { tracingInterceptor } from "./platform/tracing-interceptor.ts";
import { undecodableInputGate } from "./platform/decode-errors.ts";
import { createOpsHandler } from "./platform/ops.ts";
import { CONSOLE_PATH, createConsoleHandler } from "./console/static.ts";
import type { Registry } from "prom-client";
import { listen, type Listener } from "./platform/server.ts";
import { createRestFacade } from "./rest/facade.ts";
import { inProcessCalls } from "./rest/in-process.ts";
import { RouteTable } from "./rest/route-table.ts";
import type { RowIngest } from "./pipelines/ingest.ts";
import { RowMaintenance } from "./pipelines/rows/maintenance.ts";
import type { RowStore } from "./pipelines/rows/row-store.ts";
import { routes, services } from "./routes.ts";
import { commitEvaluationGaveUp, commitEvaluationHandler, commitEvaluationTaskType } from "./commits/evaluation.ts";
import { windowEvaluationHandler, windowEvaluationTaskType } from "./tests/evaluation/task.ts";
import { createStorage } from "./storage/storage.ts";
import { TaskQueue } from "./tasks/queue.ts";
import { createPool } from "./db/pools.ts";
import { workspaceJudge } from "./gateway/admin/judge.ts";
import type { EvaluationTools } from "./tests/evaluation/evaluate.ts";
import type { TextDetectors } from "./tests/evaluation/text-checks.ts";
import { EvaluationScheduler } from "./tests/evaluation/schedule.ts";
import { bulkUpdateTaskType, runBulkUpdate } from "./tests/bulk-update.ts";
import { ApiKeyAuthenticator } from "./workspaces/authenticator.ts";

export interface Api {
  port: number;
  /** Lets requests in flight finish for up to `drainMs` (0: cuts them), then stops everything it started. */
  stop(drainMs?: number): Promise<void>;
}

/** The management API: Connect, gRPC and REST on one port, and the task workers. */
export async function startApi(
  config: Config,
  logger: Logger,
  orm: MikroORM,
  databaseUrl: string,
  gateway: {
    secrets: SecretBox;
    masterKey: Buffer;
    consumption: Pick<CounterStore, "consumption">;
    /** Where this host's gateway listens: LLM tests' judge calls go through it. */
    port: number;
    /** The PII and injection detectors, as the gateway uses them: tests count what guardrails see. */
    detectors: () => Promise<TextDetectors>;
  },
  rows: { pool: pg.Pool; store: RowStore; ingest: RowIngest },
  /** The process's Prometheus registry, served at /metrics. */
  metrics: Registry,
  /** Spans of every RPC, when tracing is on. */
  tracing: Tracing | undefined,
): Promise<Api> {
  // Uploads (src/storage): the store that presigns and opens objects, and the handler of upload URLs,
  // signed with a key derived from the master key.
  const objectStorage = await createStorage(config.storage, { dataDir: config.dataDir, masterKey: gateway.masterKey, logger });
  const storage = objectStorage.objects;

  // Tests evaluated (src/tests/evaluation): measures over large windows, and a commit's staged
  // datasets, run on a pool of their own with longer bounds, apart from the API's and ingestion's.
  const evaluation = config.evaluation;
  const evaluationPool = createPool({
    databaseUrl,
    deadlines: {
      ...config.databaseDeadlines,
      statementTimeoutMs: evaluation.statementTimeoutMs,
      queryTimeoutMs: evaluation.statementTimeoutMs + 1_000,
      // A commit's staged datasets stay in their transaction while a judge model answers.
      idleInTransactionTimeoutMs: Math.max(config.databaseDeadlines.idleInTransactionTimeoutMs, 10 * evaluation.judgeTimeoutMs),
    },
    max: 3,
    onIdleError: (err) => logger.warn({ err }, "evaluation connection failed"),
  });
  const judgeGatewayUrl = evaluation.judgeGatewayUrl ?? `http://127.0.0.1:${gateway.port}`;
  const tools: EvaluationTools = {
    detectors: gateway.detectors,
    sqlQueryLimits: { timeoutMs: evaluation.sqlQueryTimeoutMs, memoryLimitBytes: evaluation.sqlQueryMemoryBytes, threads: 1 },
    judgeOf: async (workspaceId) => {
      const judge = await workspaceJudge(orm, gateway.secrets, workspaceId);
      return judge && { gatewayUrl: judgeGatewayUrl, apiKey: judge.apiKey, model: judge.model, timeoutMs: evaluation.judgeTimeoutMs };
    },
    judgeSampleSize: evaluation.judgeSampleSize,
  };

  const tasks = new TaskQueue(databaseUrl, config.databaseDeadlines, orm, logger);
  tasks.register(bulkUpdateTaskType, runBulkUpdate);
  tasks.register(
    commitEvaluationTaskType,
    commitEvaluationHandler({
      objects: storage,
      maxBytes: config.storage.maxObjectBytes,
      datasetLimits: { maxBytes: config.ingest.loadMaxBytes, maxRows: config.ingest.loadMaxRows, batchSize: 5_000 },
      pool: evaluationPool,
      tools,
      logger,
    }),
    { giveUp: commitEvaluationGaveUp },
  );
  // Two at a time: a window's tests are queued together, and each waits mostly on PostgreSQL.
  tasks.register(windowEvaluationTaskType, windowEvaluationHandler(evaluationPool, tools), { workers: 2 });
  await tasks.start({ runWorkers: config.runWorkers });
  const maintenance = config.runWorkers
    ? new RowMaintenance({ orm, pool: rows.pool, store: rows.store, logger, intervalMs: config.ingest.maintenanceIntervalMs })
    : undefined;
  const scheduler = config.runWorkers
    ? new EvaluationScheduler({ orm, pool: evaluationPool, tasks, logger, intervalMs: evaluation.scheduleIntervalMs })
    : undefined;
  const routeFn = routes({
    publicUrl: config.publicUrl,
    tasks,
    secrets: gateway.secrets,
    consumption: gateway.consumption,
    defaultMaxInFlight: config.gatewayMaxInFlight,
    objectStore: storage,
    pipelineData: {
      rows: rows.store,
      ingest: rows.ingest,
      files: { objects: storage, maxBytes: config.ingest.loadMaxBytes, maxRows: config.ingest.loadMaxRows },
    },
  });
  const routerOptions = {
    interceptors: [
      // Outermost: the span sees the error as the caller will.
      ...(tracing ? [tracingInterceptor(tracing)] : []),
      errorInterceptor(logger),
      authInterceptor(new ApiKeyAuthenticator(orm)),
      nulCharacterInterceptor(),
      entityManagerInterceptor(orm),
    ],
    readMaxBytes: config.maxBodyBytes,
    requestGate: undecodableInputGate(),
    // A longer grpc-timeout or connect-timeout-ms than a timer can hold would fire at once (Node
    // clamps it to 1 ms): it is refused as invalid_argument instead.
    maxTimeoutMs: 2_147_483_647,
  };
  const rest = createRestFacade({
    routes: new RouteTable(services),
    call: inProcessCalls(routeFn, routerOptions.interceptors),
    maxBodyBytes: config.maxBodyBytes,
    largeBodyBytes: config.ingest.maxBodyBytes,
    publicUrl: config.publicUrl,
    logger,
  });
  // Ready when the database answers `select 1` as fast as a new connection must open.
  const ops = createOpsHandler(async () => orm.isConnected(), config.databaseDeadlines.connectTimeoutMs, metrics);
  // The web console (docs/console.md): static files under /app/, calling REST /v1 like any client.
  const webConsole = await createConsoleHandler();
  const handler = connectNodeAdapter({
    routes: routeFn,
    ...routerOptions,
    fallback: (req, res) => {
      void ops(req, res)
        .then((handled) => handled || objectStorage.uploads(req, res))
        .then((handled) => (handled || webConsole(req, res) ? undefined : rest(req, res)));
    },
  });
  const listener: Listener = await listen(handler, {
    port: config.apiPort,
    host: config.host,
    timeouts: config.httpTimeouts,
    onHandlerError: (err) => logger.error({ err }, "request handler failed"),
    accessLog: config.accessLog ? accessLogger(logger, { component: "api" }) : undefined,
  });
  // Where a person opens the console; localhost when no public URL says better.
  const consoleUrl = `${config.publicUrl ?? `http://localhost:${listener.port}`}${CONSOLE_PATH}/`;
  // The port stays last, right before the message: tools that start Warden read `"port":N,"msg":…`.
  logger.info({ console: consoleUrl, port: listener.port }, "management API listening");
  return {
    port: listener.port,
    async stop(drainMs = 0) {
      await listener.close(drainMs);
      await objectStorage.close();
      await maintenance?.stop();
      await scheduler?.stop();
      await tasks.stop();
      await evaluationPool.end();
    },
  };
}

