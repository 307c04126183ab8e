import path from "node:path";

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
    publicUrl: env.WARDEN_PUBLIC_URL ? env.WARDEN_PUBLIC_URL.replace(/\/+$/, "") : undefined,
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
  };
}

function intVar(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return Number(raw);
}
