import { Buffer } from "node:buffer";
import { isIP } from "node:net";
import { z } from "zod";
import { defaultLeaseTtlMs } from "../gateway/limits/types.ts";
import { defaultDatabaseDeadlines, defaultMigrationTimeoutMs } from "../db/deadlines.ts";
import { defaultGuardrailLimits, MAX_TEXT_BYTES_RANGE } from "../gateway/guardrails/guardrail-limits.ts";
import { defaultStorageSettings, MAX_OBJECT_BYTES_LIMIT, MAX_URL_TTL_SECONDS } from "../storage/settings.ts";

/**
 * The one schema of every environment variable Warden reads: its default, what it accepts, and a
 * line for docs/operations.md (whose table is `settingsTable()`, checked by test/settings.test.ts).
 * An empty value counts as unset. Every problem is reported as `<VARIABLE> <what is wrong>`, and
 * secrets are never echoed.
 */

export type Env = Record<string, string | undefined>;

/** What the docs say of one variable. */
export interface SettingDoc {
  /** The default as the docs show it. */
  default: string;
  /** What the variable accepts. */
  accepts: string;
  /** One line. */
  description: string;
}

/** The longest delay a Node.js timer takes; a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647;
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const docs = new Map<string, SettingDoc>();

/** A variable: unset or empty gives `fallback`; otherwise `parse` gives the value or a problem. */
function setting<T>(doc: SettingDoc, fallback: T, parse: (raw: string) => T | Problem) {
  const schema = z
    .string()
    .optional()
    .transform((raw, ctx): T => {
      if (raw === undefined || raw === "") return fallback;
      const parsed = parse(raw);
      if (parsed instanceof Problem) {
        ctx.addIssue({ code: "custom", message: parsed.text });
        return z.NEVER;
      }
      return parsed;
    });
  return Object.assign(schema, { doc });
}

class Problem {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** A value as a message shows it. */
function shown(raw: string): string {
  return JSON.stringify(raw);
}

/** A URL with its password replaced by ***; a value that does not parse and may hold one is hidden. */
function maskedUrl(raw: string): string {
  const url = URL.parse(raw);
  if (!url) return raw.includes("@") ? "(value hidden)" : shown(raw);
  if (url.password) url.password = "***";
  return shown(url.href);
}

interface IntRange {
  min: number;
  /** A bound the docs state, so that messages say "between min and max". */
  max?: number;
  /** Absent: a timer's limit for *_MS variables, else the largest safe integer. */
  cap?: number;
}

function intSetting(name: string, description: string, fallback: number, range: IntRange, docDefault?: string) {
  const max = range.max ?? range.cap ?? (name.endsWith("_MS") ? MAX_TIMER_MS : Number.MAX_SAFE_INTEGER);
  const accepts =
    range.max !== undefined
      ? `integer, ${range.min} to ${range.max}`
      : `integer, at least ${range.min}${max < Number.MAX_SAFE_INTEGER ? ` (at most ${max})` : ""}`;
  const notInteger =
    range.max !== undefined
      ? `must be an integer between ${range.min} and ${range.max}`
      : range.min === 0
        ? "must be a non-negative integer"
        : `must be an integer of at least ${range.min}`;
  return setting({ default: docDefault ?? `\`${fallback}\``, accepts, description }, fallback, (raw) => {
    if (!/^\d+$/.test(raw)) return new Problem(`${notInteger}, got ${shown(raw)}`);
    const value = Number(raw);
    if (range.max !== undefined && (value < range.min || value > range.max)) {
      return new Problem(`must be between ${range.min} and ${range.max}, got ${raw}`);
    }
    if (value < range.min) return new Problem(`must be at least ${range.min}, got ${raw}`);
    if (value > max) return new Problem(`must be at most ${max}, got ${raw}`);
    return value;
  });
}

function textSetting<T extends string | undefined>(description: string, fallback: T, docDefault = fallback === undefined ? "unset" : `\`${fallback}\``) {
  return setting<string | T>({ default: docDefault, accepts: "text", description }, fallback, (raw) => raw);
}

function choiceSetting<const C extends string>(description: string, choices: readonly C[], fallback: C) {
  const list = choices.length === 2 ? `${choices[0]} or ${choices[1]}` : `one of ${choices.join(", ")}`;
  return setting({ default: `\`${fallback}\``, accepts: choices.map((c) => `\`${c}\``).join(", "), description }, fallback, (raw) =>
    (choices as readonly string[]).includes(raw) ? (raw as C) : new Problem(`must be ${list}, got ${shown(raw)}`),
  );
}

/** A URL of one of `schemes` (without the colon); `secret`: its password is masked in messages. */
function urlSetting(description: string, schemes: string[], what: string, options: { secret?: boolean; noQuery?: boolean; docDefault?: string } = {}) {
  const show = (raw: string) => (options.secret ? maskedUrl(raw) : shown(raw));
  return setting(
    { default: options.docDefault ?? "unset", accepts: `${schemes.map((s) => `${s}://`).join(" or ")} URL`, description },
    undefined as string | undefined,
    (raw) => {
      const url = URL.parse(raw);
      const ok = url && schemes.includes(url.protocol.slice(0, -1)) && (!options.noQuery || (!url.search && !url.hash));
      return ok ? raw : new Problem(`must be ${what}, got ${show(raw)}`);
    },
  );
}

function booleanSetting(description: string, fallback: boolean) {
  return setting({ default: `\`${fallback}\``, accepts: "`true`, `false`", description }, fallback, (raw) =>
    raw === "true" ? true : raw === "false" ? false : new Problem(`must be true or false, got ${shown(raw)}`),
  );
}

const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const S3_PREFIX = /^[A-Za-z0-9!_.*'()/-]*$/;

/** 32 bytes as 64 hex digits or base64, as src/gateway/config/secrets.ts decodes it. */
function masterKeyBytes(text: string): number {
  if (/^[0-9a-f]{64}$/i.test(text)) return 32;
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return 0;
  return Buffer.from(text, "base64").length;
}

export const settingsShape = {
  WARDEN_API_PORT: intSetting("WARDEN_API_PORT", "Port of the management API: REST `/v1`, gRPC and Connect (HTTP/1.1 and cleartext HTTP/2 on the same port), and `/healthz`, `/readyz`, `/metrics`. `0` picks a free port.", 8080, { min: 0, max: 65535 }),
  WARDEN_GATEWAY_PORT: intSetting("WARDEN_GATEWAY_PORT", "Port of the model gateway. `0` picks a free port.", 4000, { min: 0, max: 65535 }),
  WARDEN_HOST: setting(
    { default: "`0.0.0.0`", accepts: "IP address or host name", description: "Address the listeners bind to. `127.0.0.1` keeps Warden local to the machine." },
    "0.0.0.0",
    (raw) => (isIP(raw) || HOST_NAME.test(raw) ? raw : new Problem(`must be an IP address or a host name, got ${shown(raw)}`)),
  ),
  DATABASE_URL: urlSetting(
    "PostgreSQL connection URL, `postgres://user:password@host:5432/db` (PostgreSQL >= 15). Unset: Warden starts an embedded PostgreSQL under `<WARDEN_DATA_DIR>/pg`, on a free loopback port, which one Warden at a time may use.",
    ["postgres", "postgresql"],
    "a postgres:// or postgresql:// URL",
    { secret: true },
  ),
  WARDEN_DATA_DIR: textSetting(
    "Warden's own files: `admin-key` (see below), `master-key` and, with the embedded PostgreSQL, `pg/`, `pg-password` and `warden.pid` (the lock of the Warden using it).",
    ".warden",
    "`.warden` (relative to the working directory); `/app/data` in the image",
  ),
  WARDEN_ADMIN_KEY: textSetting("The admin API key of the default workspace. Unset: the first start makes one up (see below). Never shown in messages.", undefined),
  WARDEN_MASTER_KEY: setting(
    {
      default: "unset",
      accepts: "32 bytes: 64 hex digits or base64",
      description:
        "Seals provider API keys. Unset: one is made at first start in `<WARDEN_DATA_DIR>/master-key` (0600). Every process sharing a database needs the same key: set it when running more than one. Never shown in messages.",
    },
    undefined as string | undefined,
    (raw) => (masterKeyBytes(raw) === 32 ? raw : new Problem("must be 32 bytes, as 64 hex digits or base64, got (value hidden)")),
  ),
  WARDEN_PUBLIC_URL: urlSetting(
    "Base of the absolute URLs Warden writes (the `x-next` header, `taskResultUrl`), e.g. `https://warden.example.com`. Trailing slashes are dropped. Unset: taken from each request's `Host` header. Set it behind a load balancer or proxy.",
    ["http", "https"],
    "an http or https URL without query or fragment",
    { noQuery: true },
  ),
  WARDEN_MAX_BODY_BYTES: intSetting("WARDEN_MAX_BODY_BYTES", "Largest request body accepted by the management API. Larger bodies get 413.", 1024 * 1024, { min: 1 }, "`1048576` (1 MiB)"),
  WARDEN_LOG_LEVEL: choiceSetting("pino's level of the JSON log on stdout.", LOG_LEVELS, "info"),
  WARDEN_ACCESS_LOG: booleanSetting(
    "One `info` line (message `request`) per request on both listeners, `/healthz`, `/readyz` and `/metrics` excepted: request ID, status, latency and, on the gateway, key, model, provider and tokens. See [Logs](#logs).",
    true,
  ),
  WARDEN_GATEWAY_METRICS: booleanSetting(
    "Each gateway request is recorded in the gateway's metrics (requests, tokens, cost, durations, refusals, upstream errors). `false`: the gateway's `/metrics` serves the process's own metrics only. See [Metrics](#metrics).",
    true,
  ),
  WARDEN_GATEWAY_SERVER_TIMING: booleanSetting(
    "Gateway answers carry a `Server-Timing` header: the gateway's own time per step (auth, body, access, limits, guardrails, route, output), the provider's, and their sum as `gateway`. See docs/gateway.md.",
    false,
  ),
  WARDEN_SHUTDOWN_DRAIN_MS: intSetting(
    "WARDEN_SHUTDOWN_DRAIN_MS",
    "On SIGINT or SIGTERM, how long requests and streams in flight may take to finish before they are cut (a second signal cuts them at once). `0`: at once.",
    30_000,
    { min: 0 },
  ),
  WARDEN_WORKERS: booleanSetting("Whether this process runs the pg-boss job workers (bulk updates, evaluations). `false`: the process still enqueues jobs.", true),
  WARDEN_GATEWAY_MAX_IN_FLIGHT: intSetting("WARDEN_GATEWAY_MAX_IN_FLIGHT", 'Requests in flight per gateway process, until an administrator sets `PUT /v1/gateway/settings`. Past it: 503 "gateway at capacity", `Retry-After: 1`.', 1024, { min: 1 }),
  WARDEN_GATEWAY_MAX_BODY_BYTES: intSetting("WARDEN_GATEWAY_MAX_BODY_BYTES", "Largest gateway request body; larger is 413.", 32 * 1024 * 1024, { min: 1 }, "`33554432` (32 MiB)"),
  WARDEN_GATEWAY_KEY_LOOKUP_TIMEOUT_MS: intSetting(
    "WARDEN_GATEWAY_KEY_LOOKUP_TIMEOUT_MS",
    "How long a gateway waits for the database when a key is not in its snapshot; past it, 503 \"The gateway's database is unavailable\", `Retry-After: 5`.",
    1000,
    { min: 1 },
  ),
  WARDEN_REQUEST_LOG_RETENTION_DAYS: intSetting("WARDEN_REQUEST_LOG_RETENTION_DAYS", "Gateway request-log rows older than this many days are deleted.", 30, { min: 1, cap: 36_500 }),
  REDIS_URL: urlSetting(
    "Usage-limit counters in Redis (atomic Lua scripts) instead of PostgreSQL; settled usage is still written to PostgreSQL. Standalone Redis, not Cluster.",
    ["redis", "rediss"],
    "a redis:// or rediss:// URL",
    { secret: true },
  ),
  WARDEN_REDIS_KEY_PREFIX: textSetting("Prefix of every Redis key Warden writes, so that one Redis can serve several.", "warden:usage:"),
  WARDEN_GATEWAY_DEFAULT_MAX_TOKENS: intSetting(
    "WARDEN_GATEWAY_DEFAULT_MAX_TOKENS",
    "What a request that sets no `max_tokens` reserves for its output against usage limits (docs/usage-limits.md).",
    4096,
    { min: 1 },
  ),
  WARDEN_HTTP_HEADERS_TIMEOUT_MS: intSetting(
    "WARDEN_HTTP_HEADERS_TIMEOUT_MS",
    "Both listeners: a connection must complete each request's headers within this, a connection that sends nothing at all included (at most the request timeout). See [Deadlines, caps and timeouts](#deadlines-caps-and-timeouts).",
    60_000,
    { min: 1 },
  ),
  WARDEN_HTTP_REQUEST_TIMEOUT_MS: intSetting("WARDEN_HTTP_REQUEST_TIMEOUT_MS", "Both listeners: the whole request, body included, must arrive within this.", 300_000, { min: 1 }),
  WARDEN_HTTP_IDLE_TIMEOUT_MS: intSetting(
    "WARDEN_HTTP_IDLE_TIMEOUT_MS",
    "Both listeners: a kept-alive connection with no request (HTTP/2: no open stream) is closed after this; longer than the usual 60 s of load balancers, so that they close first.",
    65_000,
    { min: 1 },
  ),
  WARDEN_DB_CONNECT_TIMEOUT_MS: intSetting(
    "WARDEN_DB_CONNECT_TIMEOUT_MS",
    "Opening a PostgreSQL connection, or waiting for a free one in a pool. Also bounds `/readyz`, and connecting to Redis. `0`: off.",
    defaultDatabaseDeadlines.connectTimeoutMs,
    { min: 0 },
  ),
  WARDEN_DB_STATEMENT_TIMEOUT_MS: intSetting("WARDEN_DB_STATEMENT_TIMEOUT_MS", "PostgreSQL cancels a statement that runs longer. `0`: off.", defaultDatabaseDeadlines.statementTimeoutMs, { min: 0 }),
  WARDEN_DB_LOCK_TIMEOUT_MS: intSetting("WARDEN_DB_LOCK_TIMEOUT_MS", "A statement that waits longer for a lock fails. `0`: off.", defaultDatabaseDeadlines.lockTimeoutMs, { min: 0 }),
  WARDEN_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: intSetting(
    "WARDEN_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS",
    "PostgreSQL ends a session left idle inside a transaction this long. `0`: off.",
    defaultDatabaseDeadlines.idleInTransactionTimeoutMs,
    { min: 0 },
  ),
  WARDEN_DB_QUERY_TIMEOUT_MS: intSetting(
    "WARDEN_DB_QUERY_TIMEOUT_MS",
    "Warden's own bound on a statement (and on a Redis command), for a server that is frozen or cut off; the connection is then closed and replaced. `0`: off.",
    defaultDatabaseDeadlines.queryTimeoutMs,
    { min: 0 },
  ),
  WARDEN_DB_HEARTBEAT_INTERVAL_MS: intSetting(
    "WARDEN_DB_HEARTBEAT_INTERVAL_MS",
    "How often the gateway's LISTEN connection asks `select 1`, to notice a frozen server. `0`: off.",
    defaultDatabaseDeadlines.heartbeatIntervalMs,
    { min: 0 },
  ),
  WARDEN_DB_MIGRATION_TIMEOUT_MS: intSetting(
    "WARDEN_DB_MIGRATION_TIMEOUT_MS",
    "Replaces the statement, lock and query timeouts while migrations run at start. `0`: off.",
    defaultMigrationTimeoutMs,
    { min: 0 },
  ),
  WARDEN_GUARDRAIL_MAX_TEXT_BYTES: intSetting(
    "WARDEN_GUARDRAIL_MAX_TEXT_BYTES",
    "Text each guardrail reads per request and stage.",
    defaultGuardrailLimits.maxTextBytes,
    { min: MAX_TEXT_BYTES_RANGE.min, max: MAX_TEXT_BYTES_RANGE.max },
  ),
  WARDEN_GUARDRAIL_WORKERS: intSetting(
    "WARDEN_GUARDRAIL_WORKERS",
    "Worker threads for large guardrail texts and large gateway bodies.",
    defaultGuardrailLimits.workers,
    { min: 1, max: 256 },
    "cores − 1, 1 to 4",
  ),
  WARDEN_GUARDRAIL_QUEUE_LIMIT: intSetting(
    "WARDEN_GUARDRAIL_QUEUE_LIMIT",
    'Jobs waiting for a guardrail worker; past it, 503 "gateway at capacity".',
    defaultGuardrailLimits.queueLimit,
    { min: 0 },
  ),
  WARDEN_GUARDRAIL_TIMEOUT_MS: intSetting("WARDEN_GUARDRAIL_TIMEOUT_MS", "Deadline of one guardrail worker job, queue time included.", defaultGuardrailLimits.timeoutMs, { min: 1 }),
  WARDEN_GUARDRAIL_CACHE_ENTRIES: intSetting(
    "WARDEN_GUARDRAIL_CACHE_ENTRIES",
    "Guardrail verdicts kept per gateway process, one per piece of caller text (system prompt, message, tool result) and guardrail, so that a conversation's earlier turns are not checked again. 0 keeps none. Memory: an entry holds its text, up to 512 characters (a longer text holds a 45-character digest), shared by a workspace's guardrails: about 1 KB an entry at most, 20 MB at the default.",
    defaultGuardrailLimits.cacheEntries,
    { min: 0, max: 10_000_000 },
  ),
  WARDEN_GUARDRAIL_STREAM_WINDOW_CHARS: intSetting(
    "WARDEN_GUARDRAIL_STREAM_WINDOW_CHARS",
    "Output guardrails on streams: characters of text read past a streamed piece before it is sent. An entity or phrase up to this long that spans pieces is caught; the first token waits for this much more text.",
    defaultGuardrailLimits.streamWindowChars,
    { min: 16, max: 4096 },
  ),
  WARDEN_USAGE_LEASE_TTL_MS: intSetting(
    "WARDEN_USAGE_LEASE_TTL_MS",
    "A process that has not renewed its usage lease this long is taken for gone, and its usage reservations (its slices too) are released. A process admits calls from the room it holds for ¾ of this after its last renewal.",
    defaultLeaseTtlMs,
    // Renewed four times per TTL: below a second, a live process that waits on a busy database for
    // a moment would be taken for gone, and its reservations released while its calls still run.
    { min: 1000 },
  ),
  WARDEN_INGEST_MAX_BODY_BYTES: intSetting(
    "WARDEN_INGEST_MAX_BODY_BYTES",
    "Largest REST data-stream body (up to 1,000 rows); larger is 413. Other routes keep `WARDEN_MAX_BODY_BYTES`. See docs/monitoring.md.",
    10 * 1024 * 1024,
    { min: 1 },
    "`10485760` (10 MiB)",
  ),
  WARDEN_DATA_LOAD_MAX_BYTES: intSetting(
    "WARDEN_DATA_LOAD_MAX_BYTES",
    "Largest file `POST /v1/inference-pipelines/{id}/data` reads; larger is 400.",
    256 * 1024 * 1024,
    { min: 1 },
    "`268435456` (256 MiB)",
  ),
  WARDEN_DATA_LOAD_MAX_ROWS: intSetting("WARDEN_DATA_LOAD_MAX_ROWS", "Most rows one file load takes; more is 400, and nothing is stored.", 1_000_000, { min: 1 }),
  WARDEN_ROW_MAINTENANCE_INTERVAL_MS: intSetting(
    "WARDEN_ROW_MAINTENANCE_INTERVAL_MS",
    "How often an API process deletes rows past their pipeline's retention, and the rows of deleted pipelines.",
    600_000,
    { min: 1 },
  ),
  WARDEN_EVALUATION_INTERVAL_MS: intSetting(
    "WARDEN_EVALUATION_INTERVAL_MS",
    "How often a worker process queues the monitoring windows that have fallen due (one process at a time). See docs/tests.md.",
    30_000,
    { min: 1 },
  ),
  WARDEN_EVALUATION_STATEMENT_TIMEOUT_MS: intSetting(
    "WARDEN_EVALUATION_STATEMENT_TIMEOUT_MS",
    "The statement bound of the evaluation pool (3 connections per API process with workers), which measures windows and commits' datasets.",
    120_000,
    { min: 1 },
  ),
  WARDEN_SQL_QUERY_TIMEOUT_MS: intSetting("WARDEN_SQL_QUERY_TIMEOUT_MS", "A `sqlQuery` test's query is stopped after this, and its result is an `error`.", 10_000, { min: 1 }),
  WARDEN_SQL_QUERY_MEMORY_BYTES: intSetting(
    "WARDEN_SQL_QUERY_MEMORY_BYTES",
    "DuckDB's memory for one `sqlQuery` evaluation, the window's rows included.",
    1024 * 1024 * 1024,
    { min: 1 },
    "`1073741824` (1 GiB)",
  ),
  WARDEN_JUDGE_SAMPLE_SIZE: intSetting("WARDEN_JUDGE_SAMPLE_SIZE", "Rows a judge model scores per window or dataset, at most (one call each).", 50, { min: 1 }),
  WARDEN_JUDGE_TIMEOUT_MS: intSetting("WARDEN_JUDGE_TIMEOUT_MS", "One judge call's bound.", 60_000, { min: 1 }),
  WARDEN_JUDGE_GATEWAY_URL: setting(
    { default: "this host's gateway port", accepts: "URL", description: "Where the judge's calls reach Warden's gateway, for API processes that do not serve it." },
    undefined as string | undefined,
    (raw) => (URL.canParse(raw) ? raw : new Problem(`must be a URL, got ${maskedUrl(raw)}`)),
  ),
  WARDEN_STORAGE_BACKEND: choiceSetting("Where uploads go: `local` (under `<WARDEN_DATA_DIR>/storage/`) or `s3`. See docs/monitoring.md.", ["local", "s3"] as const, "local"),
  WARDEN_STORAGE_URL_TTL_SECONDS: intSetting(
    "WARDEN_STORAGE_URL_TTL_SECONDS",
    "How long a presigned upload URL is valid.",
    defaultStorageSettings.urlTtlSeconds,
    { min: 1, max: MAX_URL_TTL_SECONDS },
  ),
  WARDEN_STORAGE_MAX_OBJECT_BYTES: intSetting(
    "WARDEN_STORAGE_MAX_OBJECT_BYTES",
    "Largest upload; larger is 413 (local) or refused by S3 (the POST policy).",
    defaultStorageSettings.maxObjectBytes,
    { min: 1, max: MAX_OBJECT_BYTES_LIMIT },
    "`1073741824` (1 GiB)",
  ),
  WARDEN_S3_BUCKET: textSetting("The bucket, with `WARDEN_STORAGE_BACKEND=s3` (required then).", undefined),
  WARDEN_S3_REGION: textSetting("The bucket's region.", defaultStorageSettings.s3Region),
  WARDEN_S3_ENDPOINT: urlSetting("An S3-compatible endpoint (MinIO and the like).", ["http", "https"], "an http or https URL", { secret: true }),
  WARDEN_S3_ACCESS_KEY_ID: textSetting("Set with `WARDEN_S3_SECRET_ACCESS_KEY`, or neither for the AWS SDK's default credential chain.", undefined),
  WARDEN_S3_SECRET_ACCESS_KEY: textSetting("Set with `WARDEN_S3_ACCESS_KEY_ID`, or neither. Never shown in messages.", undefined),
  WARDEN_S3_FORCE_PATH_STYLE: setting(
    { default: "`false`", accepts: "`true`, `false`", description: "Path-style bucket URLs, as most S3-compatible servers want." },
    false,
    (raw) => (raw === "true" ? true : raw === "false" ? false : new Problem(`must be true or false, got ${shown(raw)}`)),
  ),
  WARDEN_S3_PREFIX: setting(
    {
      default: "unset",
      accepts: "at most 256 of A-Z a-z 0-9 ! _ . * ' ( ) / -",
      description: 'A folder for Warden\'s keys in the bucket: "warden" and "warden/" both put keys under "warden/".',
    },
    "",
    (raw) => {
      // A folder in the bucket: "warden" and "warden/" both put keys under "warden/".
      const prefix = raw.replace(/^\/+/, "");
      if (prefix.length > 256 || !S3_PREFIX.test(prefix) || prefix.split("/").some((s) => s === "." || s === "..")) {
        return new Problem(`must be at most 256 characters of A-Z a-z 0-9 ! _ . * ' ( ) / -, without . or .. segments, got ${shown(prefix)}`);
      }
      return prefix === "" || prefix.endsWith("/") ? prefix : prefix + "/";
    },
  ),
  WARDEN_S3_TIMEOUT_MS: intSetting(
    "WARDEN_S3_TIMEOUT_MS",
    "Deadline of each S3 call, its connection and a stalled download; past it, 503.",
    defaultStorageSettings.s3TimeoutMs,
    { min: 1 },
  ),
  OTEL_SDK_DISABLED: booleanSetting("`true`: no traces, whatever else is set.", false),
  OTEL_EXPORTER_OTLP_ENDPOINT: urlSetting(
    "Base URL of an OTLP/HTTP collector (`http://otel-collector:4318`): spans are posted to `<it>/v1/traces`. Unset (and no `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): no traces, and requests make no spans at all. See [Traces](#traces).",
    ["http", "https"],
    "an http:// or https:// URL",
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: urlSetting("The full URL spans are posted to; wins over `OTEL_EXPORTER_OTLP_ENDPOINT`.", ["http", "https"], "an http:// or https:// URL"),
  OTEL_EXPORTER_OTLP_PROTOCOL: choiceSetting("The OTLP transport. Only `http/protobuf` is built in.", ["http/protobuf"], "http/protobuf"),
  OTEL_EXPORTER_OTLP_HEADERS: setting(
    { default: "unset", accepts: "`name=value` pairs, comma-separated, values URL-encoded", description: "Headers sent with every export (a collector's token, say). Never shown in messages." },
    {} as Record<string, string>,
    (raw) => keyValuePairs(raw) ?? new Problem("must be name=value pairs separated by commas, got (value hidden)"),
  ),
  OTEL_EXPORTER_OTLP_TIMEOUT: intSetting("OTEL_EXPORTER_OTLP_TIMEOUT", "Deadline of each export, in milliseconds. A collector that does not answer never holds requests up: spans wait in a bounded queue.", 10_000, { min: 1, cap: MAX_TIMER_MS }),
  OTEL_SERVICE_NAME: textSetting("The `service.name` of Warden's spans.", "warden"),
  OTEL_RESOURCE_ATTRIBUTES: setting(
    { default: "unset", accepts: "`name=value` pairs, comma-separated, values URL-encoded", description: "More resource attributes (`deployment.environment.name=prod,service.namespace=ai`)." },
    {} as Record<string, string>,
    (raw) => keyValuePairs(raw) ?? new Problem(`must be name=value pairs separated by commas, got ${shown(raw)}`),
  ),
  OTEL_TRACES_SAMPLER: choiceSetting(
    "Which requests are traced. `parentbased_*` follows the caller's `traceparent` when it sent one.",
    ["parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio", "always_on", "always_off", "traceidratio"],
    "parentbased_always_on",
  ),
  OTEL_TRACES_SAMPLER_ARG: setting(
    { default: "`1`", accepts: "number, 0 to 1", description: "The share of traces kept by the `*traceidratio` samplers." },
    1,
    (raw) => {
      const value = Number(raw);
      return /^\s*$/.test(raw) || !Number.isFinite(value) || value < 0 || value > 1 ? new Problem(`must be a number between 0 and 1, got ${shown(raw)}`) : value;
    },
  ),
  OTEL_BSP_SCHEDULE_DELAY: intSetting("OTEL_BSP_SCHEDULE_DELAY", "How long ended spans may wait before they are sent, in milliseconds.", 5_000, { min: 0, cap: MAX_TIMER_MS }),
  OTEL_BSP_MAX_QUEUE_SIZE: intSetting("OTEL_BSP_MAX_QUEUE_SIZE", "Ended spans waiting to be sent, at most; past it, spans are dropped (and counted).", 2_048, { min: 1 }),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: intSetting("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "Spans per export, at most.", 512, { min: 1 }),
};

/** `a=1,b=x%20y` as a record (names trimmed, values URL-decoded); undefined when it is not that. */
function keyValuePairs(raw: string): Record<string, string> | undefined {
  const pairs: Record<string, string> = {};
  for (const part of raw.split(",")) {
    if (part.trim() === "") continue;
    const eq = part.indexOf("=");
    if (eq <= 0) return undefined;
    const name = part.slice(0, eq).trim();
    if (name === "") return undefined;
    try {
      pairs[name] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      return undefined;
    }
  }
  return pairs;
}

for (const [name, schema] of Object.entries(settingsShape)) docs.set(name, schema.doc);

/** The documentation of every variable, in the schema's order. */
export function settingDocs(): ReadonlyMap<string, SettingDoc> {
  return docs;
}

/** Checks that involve more than one variable; each runs only when its variables are valid. */
export const settingsSchema = z.object(settingsShape).superRefine(
  (s, ctx) => {
    const problem = (name: string, message: string) => ctx.addIssue({ code: "custom", path: [name], message });
    if (typeof s.WARDEN_HTTP_HEADERS_TIMEOUT_MS === "number" && typeof s.WARDEN_HTTP_REQUEST_TIMEOUT_MS === "number" && s.WARDEN_HTTP_HEADERS_TIMEOUT_MS > s.WARDEN_HTTP_REQUEST_TIMEOUT_MS) {
      problem("WARDEN_HTTP_HEADERS_TIMEOUT_MS", "must not be more than WARDEN_HTTP_REQUEST_TIMEOUT_MS");
    }
    if (s.WARDEN_STORAGE_BACKEND === "s3") {
      if (s.WARDEN_S3_BUCKET === undefined) problem("WARDEN_S3_BUCKET", "is required when WARDEN_STORAGE_BACKEND is s3");
      if ((s.WARDEN_S3_ACCESS_KEY_ID === undefined) !== (s.WARDEN_S3_SECRET_ACCESS_KEY === undefined)) {
        problem("WARDEN_S3_ACCESS_KEY_ID", "and WARDEN_S3_SECRET_ACCESS_KEY go together: set both, or neither for the AWS SDK's default chain");
      }
    }
  },
  { when: () => true },
);

export type Settings = z.output<typeof settingsSchema>;

/** Every bad setting, one line each: `<VARIABLE> <what it accepts>, got <value or (value hidden)>`. */
export class ConfigError extends Error {
  declare readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(problems.join("\n"));
    this.name = "ConfigError";
    Object.defineProperty(this, "problems", { value: problems, enumerable: false });
  }
}

/** The settings in `env`, or a ConfigError listing every bad one. Variables not in the schema are ignored. */
export function parseSettings(env: Env): Settings {
  const input: Record<string, string | undefined> = {};
  for (const name of docs.keys()) input[name] = env[name];
  const result = settingsSchema.safeParse(input);
  if (result.success) return result.data;
  throw new ConfigError(result.error.issues.map((issue) => `${String(issue.path[0])} ${issue.message}`));
}

/** The table of docs/operations.md, "Environment variables". */
export function settingsTable(): string {
  const cell = (text: string) => text.replaceAll("|", "\\|");
  const rows = [...docs].map(([name, doc]) => `| \`${name}\` | ${cell(doc.default)} | ${cell(doc.accepts)} | ${cell(doc.description)} |`);
  return ["| variable | default | accepts | meaning |", "| --- | --- | --- | --- |", ...rows].join("\n");
}
