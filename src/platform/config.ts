import path from "node:path";
import { defaultLeaseTtlMs } from "../gateway/limits/types.ts";
import type { ConnectionTimeouts } from "./server.ts";
import { defaultDatabaseDeadlines, defaultMigrationTimeoutMs, type DatabaseDeadlines } from "../db/deadlines.ts";
import { defaultGuardrailLimits, MAX_TEXT_BYTES_RANGE, type GuardrailLimits } from "../gateway/guardrails/guardrail-limits.ts";
import { defaultStorageSettings, MAX_OBJECT_BYTES_LIMIT, MAX_URL_TTL_SECONDS, type S3Settings, type StorageSettings } from "../storage/settings.ts";

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

export type Env = Record<string, string | undefined>;

export function loadConfig(env: Env): Config {
  return {
    apiPort: intVar(env, "WARDEN_API_PORT", 8080),
    gatewayPort: intVar(env, "WARDEN_GATEWAY_PORT", 4000),
    host: env.WARDEN_HOST || "0.0.0.0",
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.WARDEN_DATA_DIR || ".warden"),
    adminKey: env.WARDEN_ADMIN_KEY || undefined,
    publicUrl: publicUrlVar(env),
    httpTimeouts: httpTimeoutsVar(env),
    maxBodyBytes: intVar(env, "WARDEN_MAX_BODY_BYTES", 1024 * 1024),
    logLevel: env.WARDEN_LOG_LEVEL || "info",
    runWorkers: env.WARDEN_WORKERS !== "false",
    masterKey: env.WARDEN_MASTER_KEY || undefined,
    gatewayMaxInFlight: intVar(env, "WARDEN_GATEWAY_MAX_IN_FLIGHT", 1024),
    gatewayMaxBodyBytes: intVar(env, "WARDEN_GATEWAY_MAX_BODY_BYTES", 32 * 1024 * 1024),
    gatewayKeyLookupTimeoutMs: intVar(env, "WARDEN_GATEWAY_KEY_LOOKUP_TIMEOUT_MS", 1000),
    requestLogRetentionDays: intVar(env, "WARDEN_REQUEST_LOG_RETENTION_DAYS", 30),
    redisUrl: env.REDIS_URL || undefined,
    redisKeyPrefix: env.WARDEN_REDIS_KEY_PREFIX || "warden:usage:",
    gatewayDefaultMaxTokens: intVar(env, "WARDEN_GATEWAY_DEFAULT_MAX_TOKENS", 4096),
    guardrailLimits: guardrailLimitsVar(env),
    usageLeaseTtlMs: leaseTtlVar(env),
    databaseDeadlines: {
      connectTimeoutMs: intVar(env, "WARDEN_DB_CONNECT_TIMEOUT_MS", defaultDatabaseDeadlines.connectTimeoutMs),
      statementTimeoutMs: intVar(env, "WARDEN_DB_STATEMENT_TIMEOUT_MS", defaultDatabaseDeadlines.statementTimeoutMs),
      lockTimeoutMs: intVar(env, "WARDEN_DB_LOCK_TIMEOUT_MS", defaultDatabaseDeadlines.lockTimeoutMs),
      idleInTransactionTimeoutMs: intVar(env, "WARDEN_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS", defaultDatabaseDeadlines.idleInTransactionTimeoutMs),
      queryTimeoutMs: intVar(env, "WARDEN_DB_QUERY_TIMEOUT_MS", defaultDatabaseDeadlines.queryTimeoutMs),
      heartbeatIntervalMs: intVar(env, "WARDEN_DB_HEARTBEAT_INTERVAL_MS", defaultDatabaseDeadlines.heartbeatIntervalMs),
    },
    databaseMigrationTimeoutMs: intVar(env, "WARDEN_DB_MIGRATION_TIMEOUT_MS", defaultMigrationTimeoutMs),
    storage: storageVar(env),
    ingest: ingestVar(env),
    evaluation: evaluationVar(env),
  };
}

function publicUrlVar(env: Env): string | undefined {
  const raw = env.WARDEN_PUBLIC_URL;
  if (!raw) return undefined;
  // Every absolute URL is built on it: refuse at start what would not parse later.
  const url = URL.parse(raw);
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.search || url.hash) {
    throw new Error(`WARDEN_PUBLIC_URL must be an http or https URL without query or fragment, got "${raw}"`);
  }
  return raw.replace(/\/+$/, "");
}

function leaseTtlVar(env: Env): number {
  const ttl = intVar(env, "WARDEN_USAGE_LEASE_TTL_MS", defaultLeaseTtlMs);
  // Renewed four times per TTL: below a second, a live process that waits on a busy database for a
  // moment would be taken for gone, and its reservations released while its calls still run.
  if (ttl < 1000) throw new Error(`WARDEN_USAGE_LEASE_TTL_MS must be at least 1000, got ${ttl}`);
  return ttl;
}

function httpTimeoutsVar(env: Env): ConnectionTimeouts {
  const timeouts = {
    headersTimeoutMs: intVar(env, "WARDEN_HTTP_HEADERS_TIMEOUT_MS", 60_000),
    requestTimeoutMs: intVar(env, "WARDEN_HTTP_REQUEST_TIMEOUT_MS", 300_000),
    // Longer than the usual 60 s idle timeout of load balancers, so that they close first.
    idleTimeoutMs: intVar(env, "WARDEN_HTTP_IDLE_TIMEOUT_MS", 65_000),
  };
  for (const [name, value] of Object.entries(timeouts)) {
    if (value < 1) throw new Error(`WARDEN_HTTP_* timeouts must be at least 1 ms, got ${name} = ${value}`);
  }
  if (timeouts.headersTimeoutMs > timeouts.requestTimeoutMs) {
    throw new Error("WARDEN_HTTP_HEADERS_TIMEOUT_MS must not be more than WARDEN_HTTP_REQUEST_TIMEOUT_MS");
  }
  return timeouts;
}

function guardrailLimitsVar(env: Env): GuardrailLimits {
  const limits = {
    maxTextBytes: intVar(env, "WARDEN_GUARDRAIL_MAX_TEXT_BYTES", defaultGuardrailLimits.maxTextBytes),
    workers: intVar(env, "WARDEN_GUARDRAIL_WORKERS", defaultGuardrailLimits.workers),
    queueLimit: intVar(env, "WARDEN_GUARDRAIL_QUEUE_LIMIT", defaultGuardrailLimits.queueLimit),
    timeoutMs: intVar(env, "WARDEN_GUARDRAIL_TIMEOUT_MS", defaultGuardrailLimits.timeoutMs),
  };
  const { min, max } = MAX_TEXT_BYTES_RANGE;
  if (limits.maxTextBytes < min || limits.maxTextBytes > max) {
    throw new Error(`WARDEN_GUARDRAIL_MAX_TEXT_BYTES must be between ${min} and ${max}, got ${limits.maxTextBytes}`);
  }
  if (limits.workers < 1 || limits.timeoutMs < 1) throw new Error("WARDEN_GUARDRAIL_WORKERS and WARDEN_GUARDRAIL_TIMEOUT_MS must be at least 1");
  return limits;
}

function ingestVar(env: Env): IngestLimits {
  return {
    maxBodyBytes: positiveIntVar(env, "WARDEN_INGEST_MAX_BODY_BYTES", 10 * 1024 * 1024),
    loadMaxBytes: positiveIntVar(env, "WARDEN_DATA_LOAD_MAX_BYTES", 256 * 1024 * 1024),
    loadMaxRows: positiveIntVar(env, "WARDEN_DATA_LOAD_MAX_ROWS", 1_000_000),
    maintenanceIntervalMs: positiveIntVar(env, "WARDEN_ROW_MAINTENANCE_INTERVAL_MS", 600_000),
  };
}

function evaluationVar(env: Env): EvaluationSettings {
  const settings = {
    scheduleIntervalMs: positiveIntVar(env, "WARDEN_EVALUATION_INTERVAL_MS", 30_000),
    statementTimeoutMs: positiveIntVar(env, "WARDEN_EVALUATION_STATEMENT_TIMEOUT_MS", 120_000),
    sqlQueryTimeoutMs: positiveIntVar(env, "WARDEN_SQL_QUERY_TIMEOUT_MS", 10_000),
    sqlQueryMemoryBytes: positiveIntVar(env, "WARDEN_SQL_QUERY_MEMORY_BYTES", 1024 * 1024 * 1024),
    judgeSampleSize: positiveIntVar(env, "WARDEN_JUDGE_SAMPLE_SIZE", 50),
    judgeTimeoutMs: positiveIntVar(env, "WARDEN_JUDGE_TIMEOUT_MS", 60_000),
  };
  const judgeGatewayUrl = env.WARDEN_JUDGE_GATEWAY_URL || undefined;
  if (judgeGatewayUrl !== undefined && !URL.canParse(judgeGatewayUrl)) throw new Error(`WARDEN_JUDGE_GATEWAY_URL must be a URL, got "${judgeGatewayUrl}"`);
  return { ...settings, judgeGatewayUrl };
}

function storageVar(env: Env): StorageSettings {
  const backend = env.WARDEN_STORAGE_BACKEND || "local";
  if (backend !== "local" && backend !== "s3") throw new Error(`WARDEN_STORAGE_BACKEND must be local or s3, got "${backend}"`);
  const urlTtlSeconds = intVar(env, "WARDEN_STORAGE_URL_TTL_SECONDS", defaultStorageSettings.urlTtlSeconds);
  if (urlTtlSeconds < 1 || urlTtlSeconds > MAX_URL_TTL_SECONDS) {
    throw new Error(`WARDEN_STORAGE_URL_TTL_SECONDS must be between 1 and ${MAX_URL_TTL_SECONDS}, got ${urlTtlSeconds}`);
  }
  const maxObjectBytes = intVar(env, "WARDEN_STORAGE_MAX_OBJECT_BYTES", defaultStorageSettings.maxObjectBytes);
  if (maxObjectBytes < 1 || maxObjectBytes > MAX_OBJECT_BYTES_LIMIT) {
    throw new Error(`WARDEN_STORAGE_MAX_OBJECT_BYTES must be between 1 and ${MAX_OBJECT_BYTES_LIMIT}, got ${maxObjectBytes}`);
  }
  return { backend, urlTtlSeconds, maxObjectBytes, s3: backend === "s3" ? s3Var(env) : undefined };
}

function s3Var(env: Env): S3Settings {
  const bucket = env.WARDEN_S3_BUCKET;
  if (!bucket) throw new Error("WARDEN_S3_BUCKET is required when WARDEN_STORAGE_BACKEND is s3");
  const endpoint = env.WARDEN_S3_ENDPOINT || undefined;
  const endpointUrl = endpoint ? URL.parse(endpoint) : undefined;
  if (endpointUrl === null || (endpointUrl && endpointUrl.protocol !== "http:" && endpointUrl.protocol !== "https:")) {
    throw new Error(`WARDEN_S3_ENDPOINT must be an http or https URL, got "${endpoint}"`);
  }
  const accessKeyId = env.WARDEN_S3_ACCESS_KEY_ID || undefined;
  const secretAccessKey = env.WARDEN_S3_SECRET_ACCESS_KEY || undefined;
  if (!accessKeyId !== !secretAccessKey) {
    throw new Error("WARDEN_S3_ACCESS_KEY_ID and WARDEN_S3_SECRET_ACCESS_KEY go together: set both, or neither for the AWS SDK's default chain");
  }
  const forcePathStyle = env.WARDEN_S3_FORCE_PATH_STYLE || "false";
  if (forcePathStyle !== "true" && forcePathStyle !== "false") {
    throw new Error(`WARDEN_S3_FORCE_PATH_STYLE must be true or false, got "${forcePathStyle}"`);
  }
  // A folder in the bucket: "warden" and "warden/" both put keys under "warden/".
  const prefix = (env.WARDEN_S3_PREFIX || "").replace(/^\/+/, "");
  if (prefix.length > 256 || !/^[A-Za-z0-9!_.*'()/-]*$/.test(prefix) || prefix.split("/").some((s) => s === "." || s === "..")) {
    throw new Error(`WARDEN_S3_PREFIX must be at most 256 characters of A-Z a-z 0-9 ! _ . * ' ( ) / -, without . or .. segments, got "${prefix}"`);
  }
  const timeoutMs = intVar(env, "WARDEN_S3_TIMEOUT_MS", defaultStorageSettings.s3TimeoutMs);
  if (timeoutMs < 1) throw new Error(`WARDEN_S3_TIMEOUT_MS must be at least 1, got ${timeoutMs}`);
  return {
    bucket,
    region: env.WARDEN_S3_REGION || defaultStorageSettings.s3Region,
    endpoint,
    credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
    forcePathStyle: forcePathStyle === "true",
    prefix: prefix === "" || prefix.endsWith("/") ? prefix : prefix + "/",
    timeoutMs,
  };
}

/** An integer setting that must be at least 1; the error names the variable. */
function positiveIntVar(env: Env, name: string, fallback: number): number {
  const value = intVar(env, name, fallback);
  if (value < 1) throw new Error(`${name} must be at least 1, got ${value}`);
  return value;
}

function intVar(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return Number(raw);
}
