import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { isFromChild, type FromChild, type ToChild } from "./ipc.ts";

/**
 * Child processes of the bench (the fake provider, the bare proxy, the gateway), each pinned to a
 * core when the machine has taskset and two cores, each with an IPC channel, and each killed when
 * the bench ends, however it ends.
 */

export interface ChildSpec {
  name: string;
  /** Arguments of `node` (flags, script, script arguments). */
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The core to pin it to (taskset -c), or undefined to let it float. */
  cpu: number | undefined;
}

export interface BenchChild {
  name: string;
  pid: number;
  /** Sends a message and waits for the first answer of type `reply`. */
  ask<T extends FromChild["type"]>(message: ToChild, reply: T, timeoutMs?: number): Promise<Extract<FromChild, { type: T }>>;
  /** The first message of type `type` (for "ready"). */
  next<T extends FromChild["type"]>(type: T, timeoutMs?: number): Promise<Extract<FromChild, { type: T }>>;
  /** Rejects when the process ends before stop() is called. */
  readonly died: Promise<never>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code (null when killed). */
  stop(graceMs?: number): Promise<number | null>;
  /** The last few KB it wrote to stderr, for error messages. */
  stderr(): string;
}

const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

/** Whether taskset can pin processes to cores 0 and 1 here. */
export function canPin(): boolean {
  if (process.platform !== "linux") return false;
  try {
    execFileSync("taskset", ["-c", "-p", String(process.pid)], { stdio: "ignore" });
  } catch {
    return false;
  }
  return allowedCpus(process.pid).length >= 2;
}

/** The CPUs a process may run on (`taskset -c -p`), e.g. [0, 1]. */
export function allowedCpus(pid: number): number[] {
  const out = execFileSync("taskset", ["-c", "-p", String(pid)], { encoding: "utf8" });
  const list = out.slice(out.lastIndexOf(":") + 1).trim();
  const cpus: number[] = [];
  for (const part of list.split(",")) {
    const [from, to] = part.split("-").map(Number);
    for (let cpu = from; cpu <= (to ?? from); cpu++) cpus.push(cpu);
  }
  return cpus;
}

/** Pins every thread of this process to `cpus`. */
export function pinSelf(cpus: number[]): void {
  execFileSync("taskset", ["-a", "-c", "-p", cpus.join(","), String(process.pid)], { stdio: "ignore" });
}

export function spawnChild(spec: ChildSpec): BenchChild {
  const [command, args] = spec.cpu === undefined
    ? [process.execPath, spec.args]
    : ["taskset", ["-c", String(spec.cpu), process.execPath, ...spec.args]];
  // stdout goes nowhere (the gateway logs a JSON line per request there; writing it is its cost,
  // reading it would be ours), or with BENCH_CHILD_STDOUT to a file per child in that directory
  // (for what V8 prints there: `--trace-gc-nvp` in BENCH_GATEWAY_NODE_FLAGS, say); stderr is kept
  // for error messages.
  const directory = process.env.BENCH_CHILD_STDOUT;
  const stdout = openSync(directory ? path.join(directory, `${spec.name.replace(/\W+/g, "-")}.log`) : "/dev/null", "w");
  let child: ChildProcess;
  try {
    child = spawn(command, args, { cwd: spec.cwd, env: spec.env, stdio: ["ignore", stdout, "pipe", "ipc"] });
  } finally {
    closeSync(stdout);
  }
  live.add(child);
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (text: string) => {
    stderr = (stderr + text).slice(-8_000);
  });
  let stopping = false;
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      live.delete(child);
      exit = { code, signal };
      resolve(exit);
    });
  });
  const died = exited.then((how) => {
    throw new Error(`${spec.name} (pid ${child.pid}) ended with ${how.signal ?? `code ${how.code}`}${stopping ? " while stopping" : ""}:\n${stderr}`);
  });
  // Only a waiter's race observes it; unobserved, it must not crash the bench.
  died.catch(() => undefined);
  child.once("error", (err) => {
    stderr += `\nspawn failed: ${err.message}`;
  });

  function next<T extends FromChild["type"]>(type: T, timeoutMs = 60_000): Promise<Extract<FromChild, { type: T }>> {
    return new Promise((resolve, reject) => {
      const onMessage = (message: unknown) => {
        if (!isFromChild(message) || message.type !== type) return;
        done();
        resolve(message as Extract<FromChild, { type: T }>);
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${spec.name}: no "${type}" within ${timeoutMs} ms:\n${stderr}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        child.off("message", onMessage);
      };
      child.on("message", onMessage);
      died.catch((err: unknown) => {
        done();
        reject(err instanceof Error ? err : new Error(String(err)));
      });
    });
  }

  if (child.pid === undefined) throw new Error(`${spec.name}: could not start ${command}`);
  return {
    name: spec.name,
    pid: child.pid,
    next,
    ask(message, reply, timeoutMs) {
      const answer = next(reply, timeoutMs);
      child.send(message);
      return answer;
    },
    died,
    async stop(graceMs = 10_000) {
      stopping = true;
      if (exit) return exit.code;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      const how = await exited;
      clearTimeout(timer);
      return how.code;
    },
    stderr: () => stderr,
  };
}

/** A free TCP port on loopback (for a child that cannot tell us the one it got). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Resident set size and its peak so far, in bytes, from /proc/<pid>/status (VmRSS, VmHWM). */
export function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string): number => {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
    if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
    return Number(match[1]);
  };
  return { rss: kb("VmRSS") * 1024, peak: kb("VmHWM") * 1024 };
}

let clockTicks: number | undefined;

/** CPU seconds (user + system, every thread) a process has used so far, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid: number): number {
  if (pid === process.pid) {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1e6;
  }
  const { user, system } = cpuOfStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
  return user + system;
}

/** User and system CPU seconds of a /proc `stat` line (a process's or one thread's). */
function cpuOfStat(stat: string): { user: number; system: number } {
  clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  // Fields after the command name (which may hold spaces) start at field 3 (state); utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { user: Number(fields[11]) / clockTicks, system: Number(fields[12]) / clockTicks };
}

/**
 * CPU seconds so far of each of a process's threads, user and system apart, by thread name (the
 * main thread as `main`; threads of one name, such as libuv's pool, summed), from
 * /proc/<pid>/task. A thread that has ended is no longer listed.
 */
export function threadCpuOf(pid: number): Map<string, { user: number; system: number }> {
  const threads = new Map<string, { user: number; system: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    } catch {
      continue; // ended since it was listed
    }
    const name = Number(tid) === pid ? "main" : stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const { user, system } = cpuOfStat(stat);
    const thread = threads.get(name) ?? { user: 0, system: 0 };
    thread.user += user;
    thread.system += system;
    threads.set(name, thread);
  }
  return threads;
}

/**
 * CPU seconds every core of the machine has been busy so far, whoever used them (the first line
 * of /proc/stat: user, nice, system, irq, softirq, steal). Less our own processes' CPU time, it
 * is the other load on the machine while we measure.
 */
export function machineBusySeconds(): number {
  clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0];
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return (user + nice + system + irq + softirq + (steal ?? 0)) / clockTicks;
}

/** Whether /proc can tell RSS and CPU time (Linux). */
export const procAvailable = (): boolean => existsSync(`/proc/${process.pid}/status`);
