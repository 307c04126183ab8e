import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DataDirInUseError, lockDataDir } from "../src/db/embedded.ts";
import { ConfigError, loadConfig, type Env } from "../src/platform/config.ts";
import { settingDocs, settingsTable } from "../src/platform/settings-schema.ts";
import { spawnWarden } from "./support/processes.ts";

/** Every setting is checked against one schema before anything starts, and each error names its variable. */

function problems(env: Env): readonly string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

const s3 = { WARDEN_STORAGE_BACKEND: "s3", WARDEN_S3_BUCKET: "b" };

describe("each bad setting", () => {
  it.each<[Env, string]>([
    [{ WARDEN_API_PORT: "99999" }, "WARDEN_API_PORT must be between 0 and 65535, got 99999"],
    [{ WARDEN_API_PORT: "http" }, 'WARDEN_API_PORT must be an integer between 0 and 65535, got "http"'],
    [{ WARDEN_GATEWAY_PORT: "-1" }, 'WARDEN_GATEWAY_PORT must be an integer between 0 and 65535, got "-1"'],
    [{ WARDEN_HOST: "0.0.0.0 " }, 'WARDEN_HOST must be an IP address or a host name, got "0.0.0.0 "'],
    [{ DATABASE_URL: "not-a-url" }, 'DATABASE_URL must be a postgres:// or postgresql:// URL, got "not-a-url"'],
    [{ DATABASE_URL: "mysql://db/warden" }, 'DATABASE_URL must be a postgres:// or postgresql:// URL, got "mysql://db/warden"'],
    [{ WARDEN_MASTER_KEY: "short" }, "WARDEN_MASTER_KEY must be 32 bytes, as 64 hex digits or base64, got (value hidden)"],
    [{ WARDEN_PUBLIC_URL: "https://w.example/?a=1" }, 'WARDEN_PUBLIC_URL must be an http or https URL without query or fragment, got "https://w.example/?a=1"'],
    [{ WARDEN_MAX_BODY_BYTES: "0" }, "WARDEN_MAX_BODY_BYTES must be at least 1, got 0"],
    [{ WARDEN_LOG_LEVEL: "verbose" }, 'WARDEN_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"'],
    [{ WARDEN_ACCESS_LOG: "on" }, 'WARDEN_ACCESS_LOG must be true or false, got "on"'],
    [{ WARDEN_GATEWAY_SERVER_TIMING: "yes" }, 'WARDEN_GATEWAY_SERVER_TIMING must be true or false, got "yes"'],
    [{ WARDEN_GATEWAY_METRICS: "off" }, 'WARDEN_GATEWAY_METRICS must be true or false, got "off"'],
    [{ WARDEN_SHUTDOWN_DRAIN_MS: "-1" }, 'WARDEN_SHUTDOWN_DRAIN_MS must be a non-negative integer, got "-1"'],
    [{ WARDEN_WORKERS: "no" }, 'WARDEN_WORKERS must be true or false, got "no"'],
    [{ WARDEN_GATEWAY_MAX_IN_FLIGHT: "0" }, "WARDEN_GATEWAY_MAX_IN_FLIGHT must be at least 1, got 0"],
    [{ WARDEN_GATEWAY_MAX_BODY_BYTES: "1e6" }, 'WARDEN_GATEWAY_MAX_BODY_BYTES must be an integer of at least 1, got "1e6"'],
    [{ WARDEN_GATEWAY_KEY_LOOKUP_TIMEOUT_MS: "3000000000" }, "WARDEN_GATEWAY_KEY_LOOKUP_TIMEOUT_MS must be at most 2147483647, got 3000000000"],
    [{ WARDEN_REQUEST_LOG_RETENTION_DAYS: "0" }, "WARDEN_REQUEST_LOG_RETENTION_DAYS must be at least 1, got 0"],
    [{ REDIS_URL: "localhost:6379" }, 'REDIS_URL must be a redis:// or rediss:// URL, got "localhost:6379"'],
    [{ WARDEN_GATEWAY_DEFAULT_MAX_TOKENS: "0" }, "WARDEN_GATEWAY_DEFAULT_MAX_TOKENS must be at least 1, got 0"],
    [{ WARDEN_HTTP_HEADERS_TIMEOUT_MS: "0" }, "WARDEN_HTTP_HEADERS_TIMEOUT_MS must be at least 1, got 0"],
    [{ WARDEN_HTTP_REQUEST_TIMEOUT_MS: "5m" }, 'WARDEN_HTTP_REQUEST_TIMEOUT_MS must be an integer of at least 1, got "5m"'],
    [{ WARDEN_HTTP_IDLE_TIMEOUT_MS: "0" }, "WARDEN_HTTP_IDLE_TIMEOUT_MS must be at least 1, got 0"],
    [{ WARDEN_HTTP_HEADERS_TIMEOUT_MS: "20", WARDEN_HTTP_REQUEST_TIMEOUT_MS: "10" }, "WARDEN_HTTP_HEADERS_TIMEOUT_MS must not be more than WARDEN_HTTP_REQUEST_TIMEOUT_MS"],
    [{ WARDEN_DB_CONNECT_TIMEOUT_MS: "2s" }, 'WARDEN_DB_CONNECT_TIMEOUT_MS must be a non-negative integer, got "2s"'],
    [{ WARDEN_DB_STATEMENT_TIMEOUT_MS: "-5" }, 'WARDEN_DB_STATEMENT_TIMEOUT_MS must be a non-negative integer, got "-5"'],
    [{ WARDEN_DB_LOCK_TIMEOUT_MS: "2147483648" }, "WARDEN_DB_LOCK_TIMEOUT_MS must be at most 2147483647, got 2147483648"],
    [{ WARDEN_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: "x" }, 'WARDEN_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS must be a non-negative integer, got "x"'],
    [{ WARDEN_DB_QUERY_TIMEOUT_MS: "soon" }, 'WARDEN_DB_QUERY_TIMEOUT_MS must be a non-negative integer, got "soon"'],
    [{ WARDEN_DB_HEARTBEAT_INTERVAL_MS: "1.5" }, 'WARDEN_DB_HEARTBEAT_INTERVAL_MS must be a non-negative integer, got "1.5"'],
    [{ WARDEN_DB_MIGRATION_TIMEOUT_MS: "10 min" }, 'WARDEN_DB_MIGRATION_TIMEOUT_MS must be a non-negative integer, got "10 min"'],
    [{ WARDEN_GUARDRAIL_MAX_TEXT_BYTES: "1023" }, "WARDEN_GUARDRAIL_MAX_TEXT_BYTES must be between 1024 and 2097152, got 1023"],
    [{ WARDEN_GUARDRAIL_WORKERS: "0" }, "WARDEN_GUARDRAIL_WORKERS must be between 1 and 256, got 0"],
    [{ WARDEN_GUARDRAIL_QUEUE_LIMIT: "many" }, 'WARDEN_GUARDRAIL_QUEUE_LIMIT must be a non-negative integer, got "many"'],
    [{ WARDEN_GUARDRAIL_TIMEOUT_MS: "0" }, "WARDEN_GUARDRAIL_TIMEOUT_MS must be at least 1, got 0"],
    [{ WARDEN_GUARDRAIL_STREAM_WINDOW_CHARS: "8" }, "WARDEN_GUARDRAIL_STREAM_WINDOW_CHARS must be between 16 and 4096, got 8"],
    [{ WARDEN_GUARDRAIL_CACHE_ENTRIES: "-1" }, 'WARDEN_GUARDRAIL_CACHE_ENTRIES must be an integer between 0 and 10000000, got "-1"'],
    [{ WARDEN_USAGE_LEASE_TTL_MS: "999" }, "WARDEN_USAGE_LEASE_TTL_MS must be at least 1000, got 999"],
    [{ WARDEN_INGEST_MAX_BODY_BYTES: "0" }, "WARDEN_INGEST_MAX_BODY_BYTES must be at least 1, got 0"],
    [{ WARDEN_DATA_LOAD_MAX_BYTES: "0" }, "WARDEN_DATA_LOAD_MAX_BYTES must be at least 1, got 0"],
    [{ WARDEN_DATA_LOAD_MAX_ROWS: "0" }, "WARDEN_DATA_LOAD_MAX_ROWS must be at least 1, got 0"],
    [{ WARDEN_ROW_MAINTENANCE_INTERVAL_MS: "0" }, "WARDEN_ROW_MAINTENANCE_INTERVAL_MS must be at least 1, got 0"],
    [{ WARDEN_EVALUATION_INTERVAL_MS: "0" }, "WARDEN_EVALUATION_INTERVAL_MS must be at least 1, got 0"],
    [{ WARDEN_EVALUATION_STATEMENT_TIMEOUT_MS: "0" }, "WARDEN_EVALUATION_STATEMENT_TIMEOUT_MS must be at least 1, got 0"],
    [{ WARDEN_SQL_QUERY_TIMEOUT_MS: "0" }, "WARDEN_SQL_QUERY_TIMEOUT_MS must be at least 1, got 0"],
    [{ WARDEN_SQL_QUERY_MEMORY_BYTES: "1GB" }, 'WARDEN_SQL_QUERY_MEMORY_BYTES must be an integer of at least 1, got "1GB"'],
    [{ WARDEN_JUDGE_SAMPLE_SIZE: "0" }, "WARDEN_JUDGE_SAMPLE_SIZE must be at least 1, got 0"],
    [{ WARDEN_JUDGE_TIMEOUT_MS: "0" }, "WARDEN_JUDGE_TIMEOUT_MS must be at least 1, got 0"],
    [{ WARDEN_JUDGE_GATEWAY_URL: "not a url" }, 'WARDEN_JUDGE_GATEWAY_URL must be a URL, got "not a url"'],
    [{ WARDEN_STORAGE_BACKEND: "gcs" }, 'WARDEN_STORAGE_BACKEND must be local or s3, got "gcs"'],
    [{ WARDEN_STORAGE_URL_TTL_SECONDS: "604801" }, "WARDEN_STORAGE_URL_TTL_SECONDS must be between 1 and 604800, got 604801"],
    [{ WARDEN_STORAGE_MAX_OBJECT_BYTES: "0" }, "WARDEN_STORAGE_MAX_OBJECT_BYTES must be between 1 and 5368709120, got 0"],
    [{ WARDEN_STORAGE_BACKEND: "s3" }, "WARDEN_S3_BUCKET is required when WARDEN_STORAGE_BACKEND is s3"],
    [{ ...s3, WARDEN_S3_ENDPOINT: "minio:9000" }, 'WARDEN_S3_ENDPOINT must be an http or https URL, got "minio:9000"'],
    [{ ...s3, WARDEN_S3_SECRET_ACCESS_KEY: "s" }, "WARDEN_S3_ACCESS_KEY_ID and WARDEN_S3_SECRET_ACCESS_KEY go together: set both, or neither for the AWS SDK's default chain"],
    [{ ...s3, WARDEN_S3_FORCE_PATH_STYLE: "yes" }, 'WARDEN_S3_FORCE_PATH_STYLE must be true or false, got "yes"'],
    [{ ...s3, WARDEN_S3_PREFIX: "a/../b" }, `WARDEN_S3_PREFIX must be at most 256 characters of A-Z a-z 0-9 ! _ . * ' ( ) / -, without . or .. segments, got "a/../b"`],
    [{ ...s3, WARDEN_S3_TIMEOUT_MS: "0" }, "WARDEN_S3_TIMEOUT_MS must be at least 1, got 0"],
    [{ OTEL_SDK_DISABLED: "1" }, 'OTEL_SDK_DISABLED must be true or false, got "1"'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, 'OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, got "collector:4318"'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "grpc://collector:4317" }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http:// or https:// URL, got "grpc://collector:4317"'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, 'OTEL_EXPORTER_OTLP_PROTOCOL must be one of http/protobuf, got "grpc"'],
    [{ OTEL_EXPORTER_OTLP_HEADERS: "api-key" }, "OTEL_EXPORTER_OTLP_HEADERS must be name=value pairs separated by commas, got (value hidden)"],
    [{ OTEL_EXPORTER_OTLP_TIMEOUT: "0" }, "OTEL_EXPORTER_OTLP_TIMEOUT must be at least 1, got 0"],
    [{ OTEL_RESOURCE_ATTRIBUTES: "env" }, 'OTEL_RESOURCE_ATTRIBUTES must be name=value pairs separated by commas, got "env"'],
    [{ OTEL_TRACES_SAMPLER: "sometimes" }, 'OTEL_TRACES_SAMPLER must be one of parentbased_always_on, parentbased_always_off, parentbased_traceidratio, always_on, always_off, traceidratio, got "sometimes"'],
    [{ OTEL_TRACES_SAMPLER_ARG: "1.5" }, 'OTEL_TRACES_SAMPLER_ARG must be a number between 0 and 1, got "1.5"'],
    [{ OTEL_BSP_SCHEDULE_DELAY: "soon" }, 'OTEL_BSP_SCHEDULE_DELAY must be a non-negative integer, got "soon"'],
    [{ OTEL_BSP_MAX_QUEUE_SIZE: "0" }, "OTEL_BSP_MAX_QUEUE_SIZE must be at least 1, got 0"],
    [{ OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "0" }, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE must be at least 1, got 0"],
  ])("%j is refused with its name", (env, message) => {
    expect(problems(env)).toEqual([message]);
  });

  it("covers every variable that can be bad (the free-text ones cannot)", () => {
    const freeText = ["WARDEN_DATA_DIR", "WARDEN_ADMIN_KEY", "WARDEN_REDIS_KEY_PREFIX", "WARDEN_S3_BUCKET", "WARDEN_S3_REGION", "WARDEN_S3_ACCESS_KEY_ID", "WARDEN_S3_SECRET_ACCESS_KEY", "OTEL_SERVICE_NAME"];
    const source = readFile(new URL(import.meta.url), "utf8");
    return source.then((text) => {
      for (const name of settingDocs().keys()) {
        if (!freeText.includes(name)) expect(text, name).toContain(`${name} must`);
      }
    });
  });
});

describe("several bad settings", () => {
  it("are all listed, in one error", () => {
    expect(problems({ WARDEN_LOG_LEVEL: "verbose", WARDEN_API_PORT: "99999", DATABASE_URL: "not-a-url", WARDEN_STORAGE_BACKEND: "s3" })).toEqual([
      "WARDEN_API_PORT must be between 0 and 65535, got 99999",
      'DATABASE_URL must be a postgres:// or postgresql:// URL, got "not-a-url"',
      'WARDEN_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"',
      "WARDEN_S3_BUCKET is required when WARDEN_STORAGE_BACKEND is s3",
    ]);
  });
});

describe("secrets", () => {
  it("are never echoed: keys hidden, URL passwords masked", () => {
    const listed = problems({
      WARDEN_MASTER_KEY: "hunter2-master",
      DATABASE_URL: "mysql://warden:hunter2-db@db.example/warden",
      REDIS_URL: "http://:hunter2-redis@cache.example",
      WARDEN_S3_ENDPOINT: "ftp://id:hunter2-s3@minio.example",
      WARDEN_JUDGE_GATEWAY_URL: "hunter2-judge@gateway:4000",
    }).join("\n");
    expect(listed).not.toMatch(/hunter2/);
    expect(listed).toContain('DATABASE_URL must be a postgres:// or postgresql:// URL, got "mysql://warden:***@db.example/warden"');
    expect(listed).toContain('REDIS_URL must be a redis:// or rediss:// URL, got "http://:***@cache.example/"');
    expect(listed).toContain("WARDEN_MASTER_KEY must be 32 bytes, as 64 hex digits or base64, got (value hidden)");
    expect(listed).toContain("WARDEN_JUDGE_GATEWAY_URL must be a URL, got (value hidden)");
    expect(problems({ DATABASE_URL: "postgres//warden:hunter2@db" })).toEqual(["DATABASE_URL must be a postgres:// or postgresql:// URL, got (value hidden)"]);
  });

  it("that are good are taken as they are", () => {
    const config = loadConfig({ WARDEN_MASTER_KEY: "ab".repeat(32), DATABASE_URL: "postgresql://w:p@db/w", REDIS_URL: "rediss://:p@r:6380", WARDEN_LOG_LEVEL: "silent", WARDEN_WORKERS: "false" });
    expect([config.masterKey, config.databaseUrl, config.redisUrl, config.logLevel, config.runWorkers]).toEqual(["ab".repeat(32), "postgresql://w:p@db/w", "rediss://:p@r:6380", "silent", false]);
    expect(loadConfig({ WARDEN_MASTER_KEY: Buffer.alloc(32, 7).toString("base64") }).masterKey).toBeDefined();
  });
});

describe("docs/operations.md", () => {
  it("has the schema's table, every variable and no other", async () => {
    const doc = await readFile(new URL("../docs/operations.md", import.meta.url), "utf8");
    // Regenerate: node -e 'import("./src/platform/settings-schema.ts").then((m) => console.log(m.settingsTable()))'
    expect(doc).toContain(settingsTable());
    const section = doc.slice(doc.indexOf("## Environment variables"), doc.indexOf("## Endpoints for operators"));
    const documented = [...section.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]);
    expect(documented).toEqual([...settingDocs().keys()]);
  });
});

/** `node src/main.ts` as an operator runs it. */
function run(env: Record<string, string>, unset: string[] = []): Promise<{ code: number | null; stderr: string; ms: number }> {
  const merged: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !unset.includes(name) && !name.startsWith("WARDEN_") && name !== "REDIS_URL") merged[name] = value;
  }
  const started = Date.now();
  const child = spawn(process.execPath, ["src/main.ts"], { env: { ...merged, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.resume();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`still running after 15 s: ${stderr}`));
    }, 15_000);
    child.once("error", reject);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, ms: Date.now() - started });
    });
  });
}

describe("a start with a bad setting", () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "warden-settings-"));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it.each<[Record<string, string>, string]>([
    [{ WARDEN_LOG_LEVEL: "verbose" }, 'Warden cannot start: WARDEN_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"\n'],
    [{ WARDEN_API_PORT: "99999" }, "Warden cannot start: WARDEN_API_PORT must be between 0 and 65535, got 99999\n"],
    [{ DATABASE_URL: "not-a-url" }, 'Warden cannot start: DATABASE_URL must be a postgres:// or postgresql:// URL, got "not-a-url"\n'],
    [
      { WARDEN_LOG_LEVEL: "verbose", WARDEN_API_PORT: "99999", DATABASE_URL: "not-a-url" },
      "Warden cannot start:\n" +
        "  WARDEN_API_PORT must be between 0 and 65535, got 99999\n" +
        '  DATABASE_URL must be a postgres:// or postgresql:// URL, got "not-a-url"\n' +
        '  WARDEN_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"\n',
    ],
  ])("%j exits at once with status 2, saying why", async (env, message) => {
    const result = await run({ WARDEN_DATA_DIR: dataDir, ...env }, ["DATABASE_URL"]);
    expect(result.stderr).toBe(message);
    expect(result.code).toBe(2);
  });
});

describe("the data directory", () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "warden-lock-"));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it("is held by one Warden at a time, and given back at stop", async () => {
    const release = await lockDataDir(dataDir);
    expect((await readFile(path.join(dataDir, "warden.pid"), "utf8")).trim()).toBe(String(process.pid));
    // Another process (pid 1 is never this one) finds it held by this live Node.js process.
    await expect(lockDataDir(dataDir, process.pid + 1_000_000)).rejects.toThrow(
      new DataDirInUseError(path.resolve(dataDir), process.pid),
    );
    await release();
    const again = await lockDataDir(dataDir, process.pid + 1_000_000);
    await again();
  });

  it("is taken over from a Warden that is gone", async () => {
    const gone = spawn(process.execPath, ["-e", ""]);
    await new Promise((done) => gone.once("exit", done));
    await writeFile(path.join(dataDir, "warden.pid"), `${gone.pid}\n`);
    const release = await lockDataDir(dataDir);
    expect((await readFile(path.join(dataDir, "warden.pid"), "utf8")).trim()).toBe(String(process.pid));
    await release();
  });

  it("in use makes a second start exit at once with status 2, naming it and its holder", async () => {
    const release = await lockDataDir(dataDir);
    try {
      const result = await run({ WARDEN_DATA_DIR: dataDir, WARDEN_LOG_LEVEL: "silent" }, ["DATABASE_URL"]);
      expect(result.stderr).toBe(`Warden cannot start: the data directory ${path.resolve(dataDir)} is in use by another Warden (process ${process.pid}).\n`);
      expect(result.code).toBe(2);
    } finally {
      await release();
    }
  });

  it("in use by a running Warden on the embedded PostgreSQL stops a second one at once", async () => {
    const own = await mkdtemp(path.join(os.tmpdir(), "warden-lock-"));
    const env = { WARDEN_DATA_DIR: own, WARDEN_API_PORT: "0", WARDEN_GATEWAY_PORT: "0", WARDEN_HOST: "127.0.0.1" };
    const first = await spawnWarden([], env, "management API listening", ["DATABASE_URL", "WARDEN_ADMIN_KEY"]);
    try {
      const second = await run(env, ["DATABASE_URL", "WARDEN_ADMIN_KEY"]);
      expect(second.stderr).toBe(`Warden cannot start: the data directory ${path.resolve(own)} is in use by another Warden (process ${first.child.pid}).\n`);
      expect(second.code).toBe(2);
      // The first one is untouched by the attempt.
      expect((await fetch(`http://127.0.0.1:${first.port}/healthz`)).status).toBe(200);
    } finally {
      expect(await first.stop()).toBe(0);
      await rm(own, { recursive: true, force: true });
    }
    // A first start runs initdb, on a machine that may be busy with other test files.
  }, 120_000);
});
