import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { startApp, type App, type Roles } from "../src/app.ts";
import { startEmbeddedPostgres } from "../src/db/embedded.ts";
import { loadConfig } from "../src/platform/config.ts";
import { createLogger } from "../src/platform/logger.ts";
import { generateManagementKey } from "../src/workspaces/keys.ts";

export interface BenchServer {
  app: App;
  baseUrl: string;
  adminKey: string;
  /** The bench's own database, for other Warden processes to share. */
  databaseUrl: string;
  /** Warden's data dir (temporary). */
  dataDir: string;
  /** Where the database came from, for the report. */
  databaseKind: "DATABASE_URL" | "embedded";
  /** `server_version` of the PostgreSQL under test. */
  postgresVersion: string;
  stop(): Promise<void>;
}

export interface BenchServerOptions {
  /** What this process serves; both halves by default. */
  roles?: Roles;
  /** More Warden settings, as environment variables (WARDEN_MASTER_KEY, WARDEN_WORKERS, …). */
  settings?: Record<string, string>;
}

/**
 * Warden in this process, as test/support/app.ts starts it, over a database of its own: a fresh
 * `warden_bench_<random>` on the DATABASE_URL server (dropped at the end), or an embedded
 * PostgreSQL in a temporary folder.
 */
export async function startBenchServer(env: NodeJS.ProcessEnv = process.env, options: BenchServerOptions = {}): Promise<BenchServer> {
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async (): Promise<void> => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        console.error("bench cleanup failed:", err);
      }
    }
  };
  try {
    const tempDir = await mkdtemp(path.join(os.tmpdir(), "warden-bench-"));
    cleanups.push(() => rm(tempDir, { recursive: true, force: true }));

    let databaseUrl: string;
    let databaseKind: BenchServer["databaseKind"];
    if (env.DATABASE_URL) {
      const adminUrl = env.DATABASE_URL;
      const name = `warden_bench_${randomBytes(6).toString("hex")}`;
      await withClient(adminUrl, (client) => client.query(`create database ${name}`));
      cleanups.push(() => withClient(adminUrl, (client) => client.query(`drop database if exists ${name} with (force)`)).then(() => undefined));
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      databaseUrl = url.toString();
      databaseKind = "DATABASE_URL";
    } else {
      // A folder of its own: startEmbeddedPostgres opens it (0711) to the `postgres` OS user.
      const pgDir = await mkdtemp(path.join(os.tmpdir(), "warden-bench-pg-"));
      cleanups.push(() => rm(pgDir, { recursive: true, force: true }));
      const embedded = await startEmbeddedPostgres(pgDir, createLogger("silent"));
      cleanups.push(() => embedded.stop());
      databaseUrl = embedded.url;
      databaseKind = "embedded";
    }
    const postgresVersion = await withClient(databaseUrl, async (client) => {
      const result = await client.query<{ server_version: string }>("show server_version");
      return result.rows[0]?.server_version ?? "unknown";
    });

    const adminKey = generateManagementKey();
    const dataDir = path.join(tempDir, "warden-data");
    const config = loadConfig({
      ...options.settings,
      DATABASE_URL: databaseUrl,
      WARDEN_API_PORT: "0",
      WARDEN_GATEWAY_PORT: "0",
      WARDEN_HOST: "127.0.0.1",
      WARDEN_DATA_DIR: dataDir,
      WARDEN_ADMIN_KEY: adminKey,
      WARDEN_LOG_LEVEL: "silent",
    });
    const app = await startApp(config, createLogger(config.logLevel), {}, options.roles);
    cleanups.push(() => app.stop());

    return {
      app,
      baseUrl: `http://127.0.0.1:${app.apiPort}`,
      adminKey,
      databaseUrl,
      dataDir,
      databaseKind,
      postgresVersion,
      stop: cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
