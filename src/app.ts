import { writeFile, mkdir } from "node:fs/promises";
import path from "node:path";
import type { MikroORM } from "@mikro-orm/postgresql";
import { collectDefaultMetrics, Registry } from "prom-client";
import { commitEntities } from "./commits/entities.ts";
import { gatewayEntities } from "./gateway/config/entities.ts";
import { loadMasterKey, SecretBox } from "./gateway/config/secrets.ts";
import type { Gateway } from "./gateway/gateway.ts";
import { openCounterStore } from "./gateway/limits/counter-store.ts";
import { loadTextDetectors, type DetectorSources } from "./gateway/guardrails/detectors/loader.ts";
import { once } from "./platform/once.ts";
import { settleBuiltinPrototypes } from "./platform/prototypes.ts";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "./db/embedded.ts";
import { createOrm } from "./db/orm.ts";
import { createPool } from "./db/pools.ts";
import { RowIngest } from "./pipelines/ingest.ts";
import { RowStore } from "./pipelines/rows/row-store.ts";
import { pipelineEntities } from "./pipelines/entities.ts";
import type { Config } from "./platform/config.ts";
import type { Logger } from "./platform/logger.ts";
import { Tracing } from "./platform/tracing.ts";
import { projectEntities } from "./projects/entities.ts";
import { taskEntities } from "./tasks/entities.ts";
import { testEntities } from "./tests/entities.ts";
import { bootstrap } from "./workspaces/bootstrap.ts";
import { workspaceEntities } from "./workspaces/entities.ts";

export interface App {
  /** Set when this process serves the management API. */
  apiPort: number | undefined;
  /** Set when this process serves the model gateway. */
  gateway: Gateway | undefined;
  orm: MikroORM;
  /** Rows in: data-stream and the gateway's traffic write through it. */
  ingest: RowIngest;
  /** Lets requests in flight finish for up to `drainMs` (0: cuts them), then stops, the database last. */
  stop(drainMs?: number): Promise<void>;
}

/** What one process serves: both halves by default; `warden gateway` runs the gateway alone. */
export interface Roles {
  api: boolean;
  gateway: boolean;
}

const entities = [
  ...gatewayEntities,
  ...workspaceEntities,
  ...projectEntities,
  ...commitEntities,
  ...testEntities,
  ...pipelineEntities,
  ...taskEntities,
];

export interface AppHooks {
  /** Called as soon as a first start has made the admin key, before anything else can fail. */
  onAdminKeyGenerated?(key: string, file: string): void;
  /** Where guardrail detectors read their data: the bundled files unless given. */
  detectorSources?: DetectorSources;
}

/** The composition root: builds everything from config, and starts serving. */
export async function startApp(
  config: Config,
  logger: Logger,
  hooks: AppHooks = {},
  roles: Roles = { api: true, gateway: true },
): Promise<App> {
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres(config.dataDir, logger);
    databaseUrl = embedded.url;
  }
  const orm = await createOrm({
    databaseUrl,
    entities,
    deadlines: config.databaseDeadlines,
    migrationTimeoutMs: config.databaseMigrationTimeoutMs,
  });
  const boot = await bootstrap(orm, config.adminKey);
  if (boot.generatedAdminKey) {
    await mkdir(config.dataDir, { recursive: true });
    const adminKeyFile = path.join(config.dataDir, "admin-key");
    await writeFile(adminKeyFile, boot.generatedAdminKey + "\n", { mode: 0o600 });
    hooks.onAdminKeyGenerated?.(boot.generatedAdminKey, adminKeyFile);
  }

  const masterKey = await loadMasterKey(config.masterKey, config.dataDir);
  const secrets = new SecretBox(masterKey);
  // Rows in, from data-stream, loads and the gateway's traffic, on a pool of their own.
  const rowPool = createPool({
    databaseUrl,
    deadlines: config.databaseDeadlines,
    max: 4,
    onIdleError: (err) => logger.warn({ err }, "row store connection failed"),
  });
  const rows = { pool: rowPool, store: new RowStore(rowPool) };
  const ingest = new RowIngest(orm, rows.store);
  // One Prometheus registry per process, served at /metrics on both listeners.
  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics });
  // Spans, exported over OTLP, only when a collector is named.
  const tracing = config.tracing ? new Tracing(config.tracing, metrics, logger) : undefined;
  const counters = await openCounterStore({ databaseUrl, redisUrl: config.redisUrl, redisKeyPrefix: config.redisKeyPrefix, deadlines: config.databaseDeadlines, leaseTtlMs: config.usageLeaseTtlMs, logger });
  // Each half is loaded only by a process that serves it, so that a gateway process stays small.
  const gateway = roles.gateway
    ? await (await import("./gateway/gateway.ts")).startGateway({
        orm,
        databaseUrl,
        secrets,
        logger,
        port: config.gatewayPort,
        host: config.host,
        maxBodyBytes: config.gatewayMaxBodyBytes,
        defaultMaxInFlight: config.gatewayMaxInFlight,
        keyLookupTimeoutMs: config.gatewayKeyLookupTimeoutMs,
        httpTimeouts: config.httpTimeouts,
        databaseDeadlines: config.databaseDeadlines,
        requestLogRetentionDays: config.requestLogRetentionDays,
        detectorSources: hooks.detectorSources,
        counters: counters.slices,
        defaultMaxTokens: config.gatewayDefaultMaxTokens,
        guardrailLimits: config.guardrailLimits,
        pipelineSink: (id, rowConfig, rows) => ingest.stream(id, rowConfig, rows),
        metrics,
        recordMetrics: config.gatewayMetrics,
        accessLog: config.accessLog,
        serverTiming: config.gatewayServerTiming,
        tracing,
      })
    : undefined;
  const api = roles.api
    ? await (await import("./api.ts")).startApi(
        config,
        logger,
        orm,
        databaseUrl,
        {
          secrets,
          masterKey,
          consumption: counters.store,
          port: gateway?.port ?? config.gatewayPort,
          // The gateway's own detectors when this process serves it; loaded once otherwise.
          detectors: gateway ? () => gateway.detectors.ready : once(() => loadTextDetectors(hooks.detectorSources)),
        },
        { ...rows, ingest },
        metrics,
        tracing,
      )
    : undefined;
  // Every module of the process is loaded by now; some leave a built-in prototype slow.
  settleBuiltinPrototypes();

  return {
    apiPort: api?.port,
    gateway,
    orm,
    ingest,
    async stop(drainMs = 0) {
      // Both listeners drain at once; the request log and pipeline rows are flushed as the gateway
      // stops; the database goes last, the embedded one after every pool has let go of it.
      await Promise.all([api?.stop(drainMs), gateway?.stop(drainMs)]);
      // The last spans are sent (each export bounded by OTEL_EXPORTER_OTLP_TIMEOUT).
      await tracing?.shutdown().catch((err: unknown) => logger.warn({ err }, "traces could not all be sent at shutdown"));
      await counters.close();
      await rowPool.end();
      await orm.close(true);
      await embedded?.stop();
    },
  };
}
