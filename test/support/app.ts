import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startApp, type App, type AppHooks } from "../../src/app.ts";
import { loadConfig, type Config } from "../../src/platform/config.ts";
import { createLogger, type Logger } from "../../src/platform/logger.ts";
import { generateManagementKey } from "../../src/workspaces/keys.ts";
import { createTestDatabase, type TestDatabase } from "./database.ts";

export interface TestApp {
  app: App;
  baseUrl: string;
  /** The model gateway's listener. */
  gatewayUrl: string;
  adminKey: string;
  database: TestDatabase;
  config: Config;
  stop(): Promise<void>;
}

/**
 * Warden on a port of its own, over a fresh database. With `database`, it joins an existing one
 * (a second process, or a restart).
 */
export async function startTestApp(
  options: {
    database?: TestDatabase;
    adminKey?: string;
    env?: Record<string, string>;
    hooks?: AppHooks;
    /** A logger of the test's own (one writing to a stream it reads); default: WARDEN_LOG_LEVEL's, silent. */
    logger?: Logger;
  } = {},
): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase());
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "warden-test-"));
  const adminKey = options.adminKey ?? generateManagementKey();
  const config = loadConfig({
    DATABASE_URL: database.url,
    WARDEN_API_PORT: "0",
    WARDEN_GATEWAY_PORT: "0",
    WARDEN_HOST: "127.0.0.1",
    WARDEN_DATA_DIR: dataDir,
    WARDEN_ADMIN_KEY: adminKey,
    WARDEN_LOG_LEVEL: "silent",
    // The evaluation schedule would add results for the current window to any monitoring test
    // that outlives an hour boundary; a test that wants the schedule sets its own interval.
    WARDEN_EVALUATION_INTERVAL_MS: "86400000",
    ...options.env,
  });
  const app = await startApp(config, options.logger ?? createLogger(config.logLevel), options.hooks);
  return {
    app,
    baseUrl: `http://127.0.0.1:${app.apiPort}`,
    gatewayUrl: `http://127.0.0.1:${app.gateway?.port}`,
    adminKey,
    database,
    config,
    async stop() {
      await app.stop();
      await rm(dataDir, { recursive: true, force: true });
      if (!options.database) await database.drop();
    },
  };
}
