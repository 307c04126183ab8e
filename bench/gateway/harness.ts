/**
 * What every gateway bench section needs around its measurements: a management API over a fresh
 * database, child processes (the fake provider, processes under test) pinned to cores, the
 * gateway started as deployed, the other load on the machine per phase, and a cleanup that stops
 * every child (by its own pid) and drops the database however the section ends (an error, a
 * child that dies, Ctrl-C). Used by run.ts (gateway vs bare proxy) and costs.ts (the cost of
 * guardrails and usage limits).
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Pool } from "undici";
import { startBenchServer, type BenchServer } from "../server.ts";
import { allowedCpus, canPin, cpuSecondsOf, freePort, machineBusySeconds, pinSelf, spawnChild, type BenchChild } from "./processes.ts";
import { adminClient, type Admin } from "./setup.ts";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const here = (file: string): string => path.join(root, "bench", "gateway", file);

export interface Harness {
  log: (message: string) => void;
  /** The management API (roles: api only), in this process, over the section's own database. */
  server: BenchServer;
  admin: Admin;
  /** Shared by the management API and every gateway process. */
  masterKey: string;
  /** Core 0 for the load generator and the provider, core 1 for the process under test; undefined without taskset or a second core. */
  cores: { generator: number; middle: number } | undefined;
  /** Node flags for the processes under test: `npm run gateway`'s, or BENCH_GATEWAY_NODE_FLAGS. */
  nodeFlags: string[];
  /** The gateway's WARDEN_LOG_LEVEL: info as deployed, or BENCH_GATEWAY_LOG_LEVEL. */
  logLevel: string;
  /** Runs at cleanup, in reverse order of registration. */
  defer(fn: () => Promise<unknown>): void;
  /** A child process, stopped at cleanup; it runs in `cwd`, this checkout by default. */
  start(name: string, args: string[], cpu: number | undefined, env: NodeJS.ProcessEnv, cwd?: string): BenchChild;
  /** The work, failed at once (with the child's stderr) if any child dies meanwhile. */
  guarded<T>(work: Promise<T>): Promise<T>;
  /** Stops a child before cleanup; `guarded` no longer watches it. */
  retire(child: BenchChild): Promise<void>;
  /** The fake provider on the generator's core, and its origin. */
  startProvider(): Promise<{ child: BenchChild; url: string }>;
  /**
   * `node src/main.ts gateway`, as `npm run gateway` runs it (with the GC hook preloaded), on the
   * core under test; `env` adds to or overrides its settings (REDIS_URL, …). It answers once it
   * has loaded its snapshot: see `waitUntilServed` and `waitUntilReady`. `flags` replaces
   * `nodeFlags` for this gateway; `checkout` runs another checkout's gateway (ab.ts).
   */
  startGateway(name: string, env?: Record<string, string>, flags?: string[], checkout?: string): Promise<{ child: BenchChild; url: string }>;
  /** Pins this process (the load generator) to its core, until cleanup. */
  pinGenerator(): void;
  /** CPU seconds used so far by every process on the machine but the bench's own (PostgreSQL, Redis, other work). */
  otherCpu(): number;
  /** Runs `work` and records the CPU that processes outside the bench used meanwhile. */
  phase<T>(name: string, work: () => Promise<T>): Promise<T>;
  /** What `phase` recorded: the other load, in cores, per phase. */
  load: { phase: string; seconds: number; otherCores: number }[];
  /** The database, for the report. */
  database: string;
}

/**
 * Sets up a harness, runs `fn` with it and cleans up whatever happens. Ctrl-C or a kill still
 * stops the children and drops the database.
 */
export async function withHarness<T>(log: (message: string) => void, fn: (h: Harness) => Promise<T>): Promise<T> {
  const cleanups: (() => Promise<unknown>)[] = [];
  let cleaning: Promise<void> | undefined;
  const cleanUp = (): Promise<void> => {
    cleaning ??= (async () => {
      for (const cleanup of cleanups.reverse()) {
        try {
          await cleanup();
        } catch (err) {
          console.error("gateway bench cleanup failed:", err);
        }
      }
    })();
    return cleaning;
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    log(`${signal}: cleaning up`);
    void cleanUp().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  try {
    const pin = canPin();
    const cores = pin ? { generator: 0, middle: 1 } : undefined;
    const masterKey = randomBytes(32).toString("hex");
    const defer = (cleanup: () => Promise<unknown>): void => {
      cleanups.push(cleanup);
    };

    log("gateway: starting the management API (roles: api only) on a fresh database");
    const server = await startBenchServer(process.env, {
      roles: { api: true, gateway: false },
      settings: { WARDEN_MASTER_KEY: masterKey, WARDEN_WORKERS: "false" },
    });
    defer(() => server.stop());
    const admin = adminClient(server.baseUrl, server.adminKey);
    defer(() => admin.close());

    const children: BenchChild[] = [];
    const start = (name: string, args: string[], cpu: number | undefined, env: NodeJS.ProcessEnv, cwd = root): BenchChild => {
      const child = spawnChild({ name, args, cwd, env, cpu });
      children.push(child);
      defer(() => child.stop());
      return child;
    };
    const guarded = <T>(work: Promise<T>): Promise<T> => Promise.race([work, ...children.map((c) => c.died)]);
    const retire = async (child: BenchChild): Promise<void> => {
      const at = children.indexOf(child);
      if (at >= 0) children.splice(at, 1);
      await child.stop();
    };
    const nodeFlags = (process.env.BENCH_GATEWAY_NODE_FLAGS ?? gatewayScriptFlags()).split(/\s+/).filter(Boolean);
    const logLevel = process.env.BENCH_GATEWAY_LOG_LEVEL || "info";

    const load: Harness["load"] = [];
    const ours = (): number => [process.pid, ...children.map((c) => c.pid)].reduce((sum, pid) => sum + cpuSecondsOf(pid), 0);
    const otherCpu = (): number => machineBusySeconds() - ours();

    const harness: Harness = {
      log,
      server,
      admin,
      masterKey,
      cores,
      nodeFlags,
      logLevel,
      defer,
      start,
      guarded,
      retire,
      async startProvider() {
        const child = start("fake provider", ["--expose-gc", here("fake-provider.ts")], cores?.generator, process.env);
        return { child, url: `http://127.0.0.1:${(await guarded(child.next("ready"))).port}` };
      },
      async startGateway(name, env = {}, flags = nodeFlags, checkout = root) {
        const port = await freePort();
        const child = start(
          name,
          ["--expose-gc", ...flags, "--import", pathToFileURL(here("gc-hook.ts")).href, path.join(checkout, "src", "main.ts"), "gateway"],
          cores?.middle,
          {
            ...process.env,
            DATABASE_URL: server.databaseUrl,
            WARDEN_GATEWAY_PORT: String(port),
            WARDEN_HOST: "127.0.0.1",
            WARDEN_MASTER_KEY: masterKey,
            WARDEN_ADMIN_KEY: server.adminKey,
            WARDEN_DATA_DIR: path.join(server.dataDir, name.replace(/\W+/g, "-")),
            WARDEN_LOG_LEVEL: logLevel,
            // Counters in PostgreSQL unless the caller asks for Redis, whatever this shell has.
            REDIS_URL: "",
            ...env,
          },
          checkout,
        );
        return { child, url: `http://127.0.0.1:${port}` };
      },
      pinGenerator() {
        if (!cores) return;
        const original = allowedCpus(process.pid);
        pinSelf([cores.generator]);
        defer(async () => pinSelf(original));
      },
      otherCpu,
      async phase(name, work) {
        const before = { other: otherCpu(), at: performance.now() };
        const result = await work();
        const seconds = (performance.now() - before.at) / 1000;
        load.push({ phase: name, seconds, otherCores: Math.max(0, otherCpu() - before.other) / seconds });
        return result;
      },
      load,
      database: `PostgreSQL ${server.postgresVersion} (${server.databaseKind === "embedded" ? "embedded" : "from DATABASE_URL"}), same host, not pinned`,
    };
    return await fn(harness);
  } finally {
    await cleanUp();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** The Node flags of `npm run gateway` (package.json), which the processes under test run with by default. */
function gatewayScriptFlags(): string {
  const scripts = (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
  return scripts.gateway!.split(/\s+/).filter((word) => word.startsWith("--")).join(" ");
}

/** Calls until one succeeds (the gateway has loaded its snapshot and listens), for at most `timeoutMs` (a minute). */
export async function waitUntilServed(name: string, fire: () => Promise<void>, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      await fire();
      return;
    } catch (err) {
      if (performance.now() > deadline) throw new Error(`${name} did not serve within ${timeoutMs / 1000} s`, { cause: err });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** Waits, for at most a minute, until the gateway's /readyz answers 200: its guardrail detectors have loaded. */
export async function waitUntilReady(name: string, origin: string): Promise<void> {
  const pool = new Pool(origin, { connections: 1 });
  try {
    const deadline = performance.now() + 60_000;
    let last = "no answer";
    while (performance.now() < deadline) {
      try {
        const res = await pool.request({ method: "GET", path: "/readyz" });
        last = `${res.statusCode} ${await res.body.text()}`;
        if (res.statusCode === 200) return;
      } catch (err) {
        last = err instanceof Error ? err.message : String(err);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(`${name}: /readyz did not answer 200 within a minute (last: ${last})`);
  } finally {
    await pool.destroy();
  }
}

/** The commit under test, and whether src/ differs from it (the gateway is what is on disk). */
export function sourceRevision(): string {
  try {
    const git = (...args: string[]): string => execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const changed = git("status", "--porcelain", "--", "src").split("\n").filter(Boolean).length;
    return `${git("rev-parse", "--short", "HEAD")}${changed ? ` with ${changed} uncommitted change(s) under src/` : ""}`;
  } catch {
    return "unknown (no git)";
  }
}
