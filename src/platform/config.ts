import path from "node:path";
import type { ConnectionTimeouts } from "./server.ts";
import type { DatabaseDeadlines } from "../db/deadlines.ts";
import type { GuardrailLimits } from "../gateway/guardrails/guardrail-limits.ts";
import type { StorageSettings } from "../storage/settings.ts";
import { parseSettings, type Env, type Settings } from "./settings-schema.ts";
import type { TracingSettings } from "./tracing.ts";

/** Everything Warden reads from its environment. Only the composition root builds one. */
export interface Config {
  apiPort: number;
  gatewayPort: number;
  host: string;
  /** Absent: an embedded PostgreSQL under dataDir. */
  databaseUrl: string | undefined;
  dataDir: string;
  adminKey: string | undefined;
  /** Base of absolute URLs (x-next, taskResultUrl). Absent: taken from each request's Host. */
  publicUrl: string | undefined;
  /** How long either listener waits for a client's headers, its whole request, or its next request. */
  httpTimeouts: ConnectionTimeouts;
  maxBodyBytes: number;
  logLevel: string;
  /** One info line per request on both listeners (not /healthz, /readyz, /metrics). */
  accessLog: boolean;
  /** Gateway answers carry Server-Timing: the gateway's own time per step. */
  gatewayServerTiming: boolean;
  /** Each gateway request is recorded in the gateway's Prometheus metrics. */
  gatewayMetrics: boolean;
  /** Spans exported over OTLP; undefined: no tracing at all. */
  tracing: TracingSettings | undefined;
  /** On SIGINT or SIGTERM, how long requests in flight may take to finish. */
  shutdownDrainMs: number;
  /** Run the pg-boss workers in this process. */
  runWorkers: boolean;
  /** Seals provider API keys; absent: made once under dataDir. Must be the same on every process. */
  masterKey: string | undefined;
  /** The global in-flight cap of each gateway process, until an administrator sets one. */
  gatewayMaxInFlight: number;
  /** Gateway request bodies are capped at this (prompts may carry images). */
  gatewayMaxBodyBytes: number;
  /** The one database call a gateway request may make: a key the snapshot does not know. */
  gatewayKeyLookupTimeoutMs: number;
  /** Gateway request-log rows older than this many days are deleted. */
  requestLogRetentionDays: number;
  /** Usage counters in Redis when set; in PostgreSQL otherwise. */
  redisUrl: string | undefined;
  /** Every Redis key Warden writes starts with this, so that one Redis can serve several. */
  redisKeyPrefix: string;
  /** What a request reserves for its output when it sets no max_tokens / max_output_tokens. */
  gatewayDefaultMaxTokens: number;
  /** How much text guardrails read per request, and the gateway's worker threads (docs/guardrails.md). */
  guardrailLimits: GuardrailLimits;
  /**
   * A process that has not renewed its usage lease for this long is taken for gone, and its usage
   * reservations are released by the next sweep of any live process (see src/gateway/limits/types.ts).
   */
  usageLeaseTtlMs: number;
  /** The bounds on every database connection (src/db/deadlines.ts). */
  databaseDeadlines: DatabaseDeadlines;
  /** Migrations run with this bound instead of the statement, lock and query timeouts. */
  databaseMigrationTimeoutMs: number;
  /** Where uploads go (src/storage): Warden's own disk under dataDir, or an S3-compatible bucket. */
  storage: StorageSettings;
  /** Rows in (src/pipelines): caps of data-stream bodies and of loaded files, and retention's pace. */
  ingest: IngestLimits;
  /** Tests evaluated (src/tests/evaluation): the schedule's pace and the bounds of each measure. */
  evaluation: EvaluationSettings;
}

export interface EvaluationSettings {
  /** How often due monitoring windows are looked for and queued. */
  scheduleIntervalMs: number;
  /** The statement bound of the evaluation pool: a measure over a large window takes longer than an API call. */
  statementTimeoutMs: number;
  /** A sqlQuery test's query is stopped after this. */
  sqlQueryTimeoutMs: number;
  /** DuckDB's memory for one sqlQuery, rows included. */
  sqlQueryMemoryBytes: number;
  /** Rows a judge model scores per window or dataset, at most. */
  judgeSampleSize: number;
  /** One judge call's bound. */
  judgeTimeoutMs: number;
  /** Where the judge reaches the gateway; absent: this host's gateway port. */
  judgeGatewayUrl: string | undefined;
}

export interface IngestLimits {
  /** The body cap of data-stream over REST, which carries up to 1,000 rows. */
  maxBodyBytes: number;
  /** A file loaded by POST /inference-pipelines/{id}/data, in bytes and in rows. */
  loadMaxBytes: number;
  loadMaxRows: number;
  /** How often retention and the purge of deleted pipelines' rows run. */
  maintenanceIntervalMs: number;
}

export { ConfigError, type Env } from "./settings-schema.ts";

/**
 * Everything Warden reads from its environment, checked against one schema (settings-schema.ts)
 * before anything starts: throws one ConfigError that lists every bad variable.
 */
export function loadConfig(env: Env): Config {
  const s = parseSettings(env);
  const storage: StorageSettings = {
    backend: s.WARDEN_STORAGE_BACKEND,
    urlTtlSeconds: s.WARDEN_STORAGE_URL_TTL_SECONDS,
    maxObjectBytes: s.WARDEN_STORAGE_MAX_OBJECT_BYTES,
    s3: undefined,
  };
  if (s.WARDEN_STORAGE_BACKEND === "s3") {
    const { WARDEN_S3_ACCESS_KEY_ID: accessKeyId, WARDEN_S3_SECRET_ACCESS_KEY: secretAccessKey } = s;
    storage.s3 = {
      bucket: s.WARDEN_S3_BUCKET!,
      region: s.WARDEN_S3_REGION,
      endpoint: s.WARDEN_S3_ENDPOINT,
      credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
      forcePathStyle: s.WARDEN_S3_FORCE_PATH_STYLE,
      prefix: s.WARDEN_S3_PREFIX,
      timeoutMs: s.WARDEN_S3_TIMEOUT_MS,
    };
  }
  return {
    apiPort: s.WARDEN_API_PORT,
    gatewayPort: s.WARDEN_GATEWAY_PORT,
    host: s.WARDEN_HOST,
    databaseUrl: s.DATABASE_URL,
    dataDir: path.resolve(s.WARDEN_DATA_DIR),
    adminKey: s.WARDEN_ADMIN_KEY,
    // Every absolute URL is built on it.
    publicUrl: s.WARDEN_PUBLIC_URL?.replace(/\/+$/, ""),
    httpTimeouts: {
      headersTimeoutMs: s.WARDEN_HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: s.WARDEN_HTTP_REQUEST_TIMEOUT_MS,
      idleTimeoutMs: s.WARDEN_HTTP_IDLE_TIMEOUT_MS,
    },
    maxBodyBytes: s.WARDEN_MAX_BODY_BYTES,
    logLevel: s.WARDEN_LOG_LEVEL,
    accessLog: s.WARDEN_ACCESS_LOG,
    gatewayServerTiming: s.WARDEN_GATEWAY_SERVER_TIMING,
    gatewayMetrics: s.WARDEN_GATEWAY_METRICS,
    tracing: tracingSettings(s),
    shutdownDrainMs: s.WARDEN_SHUTDOWN_DRAIN_MS,
    runWorkers: s.WARDEN_WORKERS,
    masterKey: s.WARDEN_MASTER_KEY,
    gatewayMaxInFlight: s.WARDEN_GATEWAY_MAX_IN_FLIGHT,
    gatewayMaxBodyBytes: s.WARDEN_GATEWAY_MAX_BODY_BYTES,
    gatewayKeyLookupTimeoutMs: s.WARDEN_GATEWAY_KEY_LOOKUP_TIMEOUT_MS,
    requestLogRetentionDays: s.WARDEN_REQUEST_LOG_RETENTION_DAYS,
    redisUrl: s.REDIS_URL,
    redisKeyPrefix: s.WARDEN_REDIS_KEY_PREFIX,
    gatewayDefaultMaxTokens: s.WARDEN_GATEWAY_DEFAULT_MAX_TOKENS,
    guardrailLimits: {
      maxTextBytes: s.WARDEN_GUARDRAIL_MAX_TEXT_BYTES,
      workers: s.WARDEN_GUARDRAIL_WORKERS,
      queueLimit: s.WARDEN_GUARDRAIL_QUEUE_LIMIT,
      timeoutMs: s.WARDEN_GUARDRAIL_TIMEOUT_MS,
      streamWindowChars: s.WARDEN_GUARDRAIL_STREAM_WINDOW_CHARS,
      cacheEntries: s.WARDEN_GUARDRAIL_CACHE_ENTRIES,
    },
    usageLeaseTtlMs: s.WARDEN_USAGE_LEASE_TTL_MS,
    databaseDeadlines: {
      connectTimeoutMs: s.WARDEN_DB_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: s.WARDEN_DB_STATEMENT_TIMEOUT_MS,
      lockTimeoutMs: s.WARDEN_DB_LOCK_TIMEOUT_MS,
      idleInTransactionTimeoutMs: s.WARDEN_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
      queryTimeoutMs: s.WARDEN_DB_QUERY_TIMEOUT_MS,
      heartbeatIntervalMs: s.WARDEN_DB_HEARTBEAT_INTERVAL_MS,
    },
    databaseMigrationTimeoutMs: s.WARDEN_DB_MIGRATION_TIMEOUT_MS,
    storage,
    ingest: {
      maxBodyBytes: s.WARDEN_INGEST_MAX_BODY_BYTES,
      loadMaxBytes: s.WARDEN_DATA_LOAD_MAX_BYTES,
      loadMaxRows: s.WARDEN_DATA_LOAD_MAX_ROWS,
      maintenanceIntervalMs: s.WARDEN_ROW_MAINTENANCE_INTERVAL_MS,
    },
    evaluation: {
      scheduleIntervalMs: s.WARDEN_EVALUATION_INTERVAL_MS,
      statementTimeoutMs: s.WARDEN_EVALUATION_STATEMENT_TIMEOUT_MS,
      sqlQueryTimeoutMs: s.WARDEN_SQL_QUERY_TIMEOUT_MS,
      sqlQueryMemoryBytes: s.WARDEN_SQL_QUERY_MEMORY_BYTES,
      judgeSampleSize: s.WARDEN_JUDGE_SAMPLE_SIZE,
      judgeTimeoutMs: s.WARDEN_JUDGE_TIMEOUT_MS,
      judgeGatewayUrl: s.WARDEN_JUDGE_GATEWAY_URL,
    },
  };
}

/** Tracing is on when a collector is named and the SDK is not disabled (the standard OTEL_* variables). */
function tracingSettings(s: Settings): TracingSettings | undefined {
  const base = s.OTEL_EXPORTER_OTLP_ENDPOINT?.replace(/\/+$/, "");
  const url = s.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base === undefined ? undefined : `${base}/v1/traces`);
  if (url === undefined || s.OTEL_SDK_DISABLED) return undefined;
  return {
    url,
    headers: s.OTEL_EXPORTER_OTLP_HEADERS,
    timeoutMs: s.OTEL_EXPORTER_OTLP_TIMEOUT,
    serviceName: s.OTEL_SERVICE_NAME,
    resourceAttributes: s.OTEL_RESOURCE_ATTRIBUTES,
    sampler: s.OTEL_TRACES_SAMPLER,
    samplerRatio: s.OTEL_TRACES_SAMPLER_ARG,
    scheduleDelayMs: s.OTEL_BSP_SCHEDULE_DELAY,
    maxQueueSize: s.OTEL_BSP_MAX_QUEUE_SIZE,
    maxExportBatchSize: s.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
  };
}
