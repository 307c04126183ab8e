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
  };
}

function intVar(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return Number(raw);
}
