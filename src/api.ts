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
import type { Logger } from "./platform/logger.ts";
import { undecodableInputGate } from "./platform/decode-errors.ts";
import { createOpsHandler } from "./platform/ops.ts";
import { listen, type Listener } from "./platform/server.ts";
import { createRestFacade } from "./rest/facade.ts";
import { inProcessCalls } from "./rest/in-process.ts";
import { RouteTable } from "./rest/route-table.ts";
import type { RowIngest } from "./pipelines/ingest.ts";
import { RowMaintenance } from "./pipelines/rows/maintenance.ts";
import type { RowStore } from "./pipelines/rows/row-store.ts";
import { routes, services } from "./routes.ts";
import { commitEvaluationHandler, commitEvaluationTaskType } from "./commits/evaluation.ts";
import { windowEvaluationHandler, windowEvaluationTaskType } from "./tests/evaluation/task.ts";
import { createStorage } from "./storage/storage.ts";
import { TaskQueue } from "./tasks/queue.ts";
import { bulkUpdateTaskType, runBulkUpdate } from "./tests/bulk-update.ts";
import { ApiKeyAuthenticator } from "./workspaces/authenticator.ts";

export interface Api {
  port: number;
  stop(): Promise<void>;
}

/** The management API: Connect, gRPC and REST on one port, and the task workers. */
export async function startApi(
  config: Config,
  logger: Logger,
  orm: MikroORM,
  databaseUrl: string,
  gateway: { secrets: SecretBox; masterKey: Buffer; consumption: Pick<CounterStore, "consumption"> },
  rows: { pool: pg.Pool; store: RowStore; ingest: RowIngest },
): Promise<Api> {
  // Uploads (src/storage): the store that presigns and opens objects, and the handler of upload URLs,
  // signed with a key derived from the master key.
  const objectStorage = await createStorage(config.storage, { dataDir: config.dataDir, masterKey: gateway.masterKey, logger });
  const storage = objectStorage.objects;

  const tasks = new TaskQueue(databaseUrl, config.databaseDeadlines, orm, logger);
  tasks.register(bulkUpdateTaskType, runBulkUpdate);
  tasks.register(commitEvaluationTaskType, commitEvaluationHandler({ objects: storage, maxBytes: config.storage.maxObjectBytes, logger }));
  tasks.register(windowEvaluationTaskType, windowEvaluationHandler(rows.store));
  await tasks.start({ runWorkers: config.runWorkers });
  const maintenance = config.runWorkers
    ? new RowMaintenance({ orm, pool: rows.pool, store: rows.store, logger, intervalMs: config.ingest.maintenanceIntervalMs })
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
  const ops = createOpsHandler(async () => orm.isConnected(), config.databaseDeadlines.connectTimeoutMs);
  const handler = connectNodeAdapter({
    routes: routeFn,
    ...routerOptions,
    fallback: (req, res) => {
      void ops(req, res)
        .then((handled) => handled || objectStorage.uploads(req, res))
        .then((handled) => (handled ? undefined : rest(req, res)));
    },
  });
  const listener: Listener = await listen(handler, {
    port: config.apiPort,
    host: config.host,
    timeouts: config.httpTimeouts,
    onHandlerError: (err) => logger.error({ err }, "request handler failed"),
  });
  logger.info({ port: listener.port }, "management API listening");
  return {
    port: listener.port,
    async stop() {
      await listener.close();
      await objectStorage.close();
      await maintenance?.stop();
      await tasks.stop();
    },
  };
}

