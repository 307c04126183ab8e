/**
 * Instructions a call of whole gateways (`npm run bench:gateway-instructions`; docs/performance.md,
 * "Instructions a call, whole gateways"): `node src/main.ts gateway` under valgrind's callgrind,
 * one process per setting, each warmed up with BENCH_INSTRUCTIONS_WARMUP calls (20,000) with the
 * count off, then counted over BENCH_INSTRUCTIONS_CALLS more (4,000): plain Responses calls at
 * c=64, through the bench's fake provider, spans to a collector on loopback. The count is of every
 * thread of the process, each on its own (the main thread: the JavaScript; the others: V8's
 * compiler and collector helpers), JIT code included, and does not depend on how busy the machine
 * is. Two processes of one build read within about 2 % of each other on the main thread, where
 * their CPU time a call moves by ±20 %; every thread's count moves more, with when V8 compiles.
 *
 * Run it alone. Work driven by timers (the request log's flush every 100 ms, the log's every
 * 250 ms, the span exporter's delay, undici's timers) is spread over the calls made meanwhile:
 * under valgrind a gateway serves about 200 calls a second, so such work reads some twenty times
 * larger a call than at 5,000 a second, and more again on a machine busy with something else (two
 * runs of this script at once read all off 15 % higher on the main thread).
 *
 * The main thread's count is also printed less V8's collector (collectionsOf): what the calls
 * allocate is collected when the collector chooses, and a full collection in one counted window
 * and not in another is some 10k a call; the rest moves less between two processes.
 *
 * What it answers that a timed run cannot: what a setting costs a call in steady state, and where
 * (BENCH_INSTRUCTIONS_TOP: the functions whose count grew most over the first setting, JIT code
 * named through --perf-basic-prof). The settings (BENCH_INSTRUCTIONS_SETTINGS, `name=A=1,B=2;…`)
 * are by default all off, each part of observability alone, and all three. A setting named
 * `bare proxy` (no variables: `bare proxy=;all off=…`) counts the bench's bare proxy
 * (bare-proxy.ts) instead of a gateway, over the same calls: the floor that issue 14's goals are
 * shares of, and against it, by function, where the gateway's own instructions go.
 * BENCH_INSTRUCTIONS_CALL: `plain` (the default) or `conversation` (the 20-message conversation
 * of 8 KB, its last message new on every call, as `npm run bench:ab` sends it).
 * BENCH_INSTRUCTIONS_LIMITS=1: the gateways' calls use a key whose user and group have daily
 * token limits too, each far above what the run uses (the checks bench's limited key).
 * BENCH_INSTRUCTIONS_GUARDRAILS=1: the six default guardrails (PII, prompt injection, content
 * safety, on input and on output) are on, workspace-wide.
 * BENCH_INSTRUCTIONS_PROCESSES (1) processes of each setting are counted, each with its own
 * start: with more than one, a setting's figure is their mean, and each process's is printed
 * beside it. Two processes are counted at a time. Needs valgrind; takes about two
 * minutes a pair.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Pool } from "undici";
import { root, waitUntilServed, withHarness, type Harness } from "./harness.ts";
import { callOnce, closedLoop, responsesPath, type Target } from "./load.ts";
import { startCollector } from "./observability.ts";
import { conversationBody, requestBody, variedModel } from "./payloads.ts";
import type { FromChild } from "./ipc.ts";
import { freePort } from "./processes.ts";
import { addLimitedKey, configureGateway, expectStatus, providerApiKey } from "./setup.ts";

const warmup = Number(process.env.BENCH_INSTRUCTIONS_WARMUP ?? "20000");
const calls = Number(process.env.BENCH_INSTRUCTIONS_CALLS ?? "4000");
const top = Number(process.env.BENCH_INSTRUCTIONS_TOP ?? "0");
const processes = Number(process.env.BENCH_INSTRUCTIONS_PROCESSES ?? "1");
const callKind = process.env.BENCH_INSTRUCTIONS_CALL ?? "plain";
const limited = process.env.BENCH_INSTRUCTIONS_LIMITS === "1";
const guarded = process.env.BENCH_INSTRUCTIONS_GUARDRAILS === "1";
if (callKind !== "plain" && callKind !== "conversation") throw new Error(`BENCH_INSTRUCTIONS_CALL must be plain or conversation, got "${callKind}"`);
if (!Number.isInteger(processes) || processes < 1) throw new Error(`BENCH_INSTRUCTIONS_PROCESSES must be a positive integer, got "${process.env.BENCH_INSTRUCTIONS_PROCESSES}"`);
const concurrency = 64;
const allOff = "OTEL_SDK_DISABLED=true,WARDEN_GATEWAY_METRICS=false,WARDEN_ACCESS_LOG=false";
const oneInTen = "OTEL_TRACES_SAMPLER=parentbased_traceidratio,OTEL_TRACES_SAMPLER_ARG=0.1";
/** `COLLECTOR` stands for the loopback collector's URL. */
const defaults = [
  `all off=${allOff}`,
  "access log=OTEL_SDK_DISABLED=true,WARDEN_GATEWAY_METRICS=false,WARDEN_ACCESS_LOG=true",
  "metrics=OTEL_SDK_DISABLED=true,WARDEN_GATEWAY_METRICS=true,WARDEN_ACCESS_LOG=false",
  `tracing one in ten=OTEL_EXPORTER_OTLP_ENDPOINT=COLLECTOR,${oneInTen},WARDEN_GATEWAY_METRICS=false,WARDEN_ACCESS_LOG=false`,
  `all three=OTEL_EXPORTER_OTLP_ENDPOINT=COLLECTOR,${oneInTen},WARDEN_GATEWAY_METRICS=true,WARDEN_ACCESS_LOG=true`,
].join(";");

interface Setting {
  name: string;
  env: Record<string, string>;
}

/** The setting that counts the bare proxy rather than a gateway. */
const bareProxy = "bare proxy";

function settings(text: string, collector: string): Setting[] {
  return text.split(";").map((item) => {
    const at = item.indexOf("=");
    if (at < 1) throw new Error(`BENCH_INSTRUCTIONS_SETTINGS must be name=A=1,B=2;…, got "${item}"`);
    const env: Record<string, string> = {};
    for (const pair of item.slice(at + 1).split(",").filter(Boolean)) {
      const eq = pair.indexOf("=");
      if (eq < 1) throw new Error(`BENCH_INSTRUCTIONS_SETTINGS: "${pair}" is not NAME=value`);
      env[pair.slice(0, eq)] = pair.slice(eq + 1).replace("COLLECTOR", collector);
    }
    return { name: item.slice(0, at), env };
  });
}

interface Counted {
  name: string;
  pid: number;
  /** The main thread's callgrind file. */
  file: string;
  /** Instructions a call, every thread's. */
  perCall: number;
  /** Instructions a call of the main thread alone: the JavaScript, without V8's compiler and helper threads. */
  mainPerCall: number;
  /** Of the main thread's, the collector's (collectionsOf). */
  collectorPerCall: number;
}

/** One gateway (or the bare proxy) under callgrind: warmed up uncounted, then `calls` counted; its callgrind file. */
async function count(h: Harness, setting: Setting, n: number, providerUrl: string, gatewayKey: string, out: string): Promise<Counted> {
  const file = path.join(out, `${setting.name.replace(/\W+/g, "-")}-${n}.callgrind`);
  const valgrind = ["--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes", `--callgrind-out-file=${file}`, process.execPath, ...h.nodeFlags, "--perf-basic-prof"];
  const bare = setting.name === bareProxy;
  const port = bare ? 0 : await freePort();
  const child = bare
    ? spawn("valgrind", [...valgrind, path.join(root, "bench", "gateway", "bare-proxy.ts")], {
        cwd: root,
        stdio: ["ignore", "ignore", "pipe", "ipc"],
        env: { ...process.env, BENCH_UPSTREAM: providerUrl, BENCH_CONNECTIONS: String(concurrency) },
      })
    : spawn("valgrind", [...valgrind, path.join(root, "src", "main.ts"), "gateway"], {
        cwd: root,
        stdio: ["ignore", "ignore", "pipe"],
        env: {
          ...process.env,
          DATABASE_URL: h.server.databaseUrl,
          WARDEN_GATEWAY_PORT: String(port),
          WARDEN_HOST: "127.0.0.1",
          WARDEN_MASTER_KEY: h.masterKey,
          WARDEN_ADMIN_KEY: h.server.adminKey,
          WARDEN_DATA_DIR: path.join(h.server.dataDir, `${setting.name.replace(/\W+/g, "-")}-${n}`),
          WARDEN_LOG_LEVEL: h.logLevel,
          REDIS_URL: "",
          ...setting.env,
        },
      });
  let stderr = "";
  child.stderr!.on("data", (text: Buffer) => (stderr = (stderr + text.toString()).slice(-4_000)));
  h.defer(async () => void child.kill("SIGKILL"));
  const served = bare ? await readyPort(child, () => stderr) : port;
  // Under valgrind a call takes tens of milliseconds: no timeout of undici's may cut one.
  const pool = new Pool(`http://127.0.0.1:${served}`, { connections: concurrency, headersTimeout: 0, bodyTimeout: 0 });
  h.defer(() => pool.destroy());
  // The bare proxy passes the caller's key through to the provider.
  const secret = bare ? providerApiKey : gatewayKey;
  const target: Target = { name: setting.name, origin: "", headers: { "content-type": "application/json", authorization: `Bearer ${secret}` }, path: responsesPath };
  let sequence = 0;
  const body = () => (callKind === "conversation" ? conversationBody(variedModel, sequence++) : requestBody(variedModel, false, `Say hello in one short sentence. (${sequence++})`));
  const bytes = await firstAnswer(pool, target, body, () => stderr);
  const once = () => callOnce(pool, target, body(), bytes);
  await closedLoop(warmup, concurrency, once);
  const control = (...args: string[]) => execFileSync("callgrind_control", [...args, String(child.pid)], { stdio: "ignore" });
  control("-i", "on");
  await closedLoop(calls, concurrency, once);
  control("-d");
  control("-i", "off");
  child.kill("SIGKILL");
  // One file a thread (`<file>.1-01` is the main thread's).
  const threads = readdirSync(out)
    .filter((name) => name.startsWith(`${path.basename(file)}.1-`))
    .sort()
    .map((name) => {
      const totals = /^totals: (\d+)/m.exec(readFileSync(path.join(out, name), "utf8"));
      if (!totals) throw new Error(`${setting.name}: no totals in ${name}`);
      return { file: path.join(out, name), instructions: Number(totals[1]) };
    });
  if (threads.length === 0) throw new Error(`${setting.name}: callgrind wrote no file`);
  h.log(`${setting.name}: counted`);
  const all = threads.reduce((sum, t) => sum + t.instructions, 0);
  const main = threads[0]!;
  return { name: setting.name, pid: child.pid!, file: main.file, perCall: all / calls, mainPerCall: main.instructions / calls, collectorPerCall: collectionsOf(main.file) / calls };
}

/**
 * The main thread's instructions in V8's collector: every collection (`Heap::CollectGarbage`,
 * scavenges and full ones, everything they call) and the incremental marking steps taken on
 * allocation, inclusive. What a call leaves behind is collected at moments of the collector's
 * choosing, so this part moves most between two processes (a full collection in one counted
 * window and not in the other is 10k a call); the rest of the main thread's count is steadier.
 */
function collectionsOf(file: string): number {
  const annotated = execFileSync("callgrind_annotate", ["--inclusive=yes", "--threshold=100", file], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  const inclusive = (name: string): number => {
    const line = annotated.split("\n").find((l) => l.includes(`???:${name}(`));
    return line ? Number(/^\s*([\d,]+)/.exec(line)![1]!.replaceAll(",", "")) : 0;
  };
  return inclusive("v8::internal::Heap::CollectGarbage") + inclusive("v8::internal::IncrementalMarking::Step") + inclusive("v8::internal::Heap::StartIncrementalMarking");
}

/** The port the bare proxy tells over its IPC channel once it listens (bare-proxy.ts). */
function readyPort(child: ChildProcess, stderr: () => string): Promise<number> {
  return new Promise((resolve, reject) => {
    child.on("message", (message: FromChild) => {
      if (message.type === "ready") resolve(message.port);
    });
    child.on("exit", (code) => reject(new Error(`the bare proxy exited (${code}) before it listened\n${stderr()}`)));
  });
}

/** The first answer's length, once the gateway serves: under valgrind it takes minutes to start. */
async function firstAnswer(pool: Pool, target: Target, body: () => Buffer, stderr: () => string): Promise<number> {
  let bytes = 0;
  await waitUntilServed(
    target.name,
    async () => {
      const res = await pool.request({ method: "POST", path: responsesPath, headers: target.headers, body: body() });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${text.slice(0, 300)}\n${stderr()}`);
      bytes = Buffer.byteLength(text);
    },
    300_000,
  );
  return bytes;
}

/** Instructions a call by function (self cost), JIT code named from the process's perf map. */
function byFunction(counted: Counted): Map<string, number> {
  const jit = readFileSync(`/tmp/perf-${counted.pid}.map`, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [start, size, ...name] = line.split(" ");
      return { start: parseInt(start!, 16), end: parseInt(start!, 16) + parseInt(size!, 16), name: name.join(" ") };
    })
    .sort((a, b) => a.start - b.start);
  const nameOf = (address: number): string => {
    let lo = 0;
    let hi = jit.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (jit[mid]!.end <= address) lo = mid + 1;
      else if (jit[mid]!.start > address) hi = mid - 1;
      else return jit[mid]!.name;
    }
    return "JIT code, unnamed";
  };
  const annotated = execFileSync("callgrind_annotate", ["--inclusive=no", "--threshold=100", counted.file], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  const sums = new Map<string, number>();
  for (const line of annotated.split("\n")) {
    const match = /^\s*([\d,]+) \([\s\d.]+%\)\s+(.+)$/.exec(line);
    if (!match || line.includes("PROGRAM TOTALS")) continue;
    const raw = match[2]!;
    const address = /^\?\?\?:0x([0-9a-f]+)/.exec(raw);
    const name = address ? nameOf(parseInt(address[1]!, 16)) : raw.replace(/^\?\?\?:/, "").replace(/\s*\[[^\]]*\]$/, "").slice(0, 120);
    sums.set(name, (sums.get(name) ?? 0) + Number(match[1]!.replaceAll(",", "")) / calls);
  }
  return sums;
}

const thousands = (n: number) => `${(n / 1000).toFixed(1)}k`;
const signed = (n: number) => `${n >= 0 ? "+" : "−"}${thousands(Math.abs(n))}`;

await withHarness(
  (message) => console.error(`[instructions] ${message}`),
  async (h) => {
    const provider = await h.startProvider();
    const collector = await startCollector();
    h.defer(() => collector.close());
    const configured = await configureGateway(h.admin, provider.url);
    const key = limited ? await addLimitedKey(h.admin, "instructions-limited", 1e15) : configured.key;
    if (guarded) {
      for (const kind of ["pii", "prompt_injection", "content_safety"]) {
        for (const stage of ["input", "output"]) await expectStatus(h.admin, "POST", "/v1/gateway/guardrails", 201, { kind, stage, enabled: true });
      }
    }
    const out = mkdtempSync(path.join(tmpdir(), "warden-instructions-"));
    const list = settings(process.env.BENCH_INSTRUCTIONS_SETTINGS ?? defaults, collector.url);
    // Each setting's processes one after another in the list, so that a pair counted together is
    // of two settings as often as it can be.
    const runs = Array.from({ length: processes }, (_, n) => list.map((setting) => ({ setting, n }))).flat();
    const counted: Counted[] = [];
    for (let i = 0; i < runs.length; i += 2) counted.push(...(await Promise.all(runs.slice(i, i + 2).map((r) => count(h, r.setting, r.n, provider.url, key.secret, out)))));
    const of = (setting: Setting) => counted.filter((c) => c.name === setting.name);
    console.log(
      `Instructions a call, ${calls} ${callKind} calls${limited ? " under three token limits" : ""}${guarded ? ", the six guardrails on" : ""} at c=${concurrency} after ${warmup} uncounted, ${processes} process(es) a setting; callgrind files in ${out}`,
    );
    // The main thread's count, and every thread's: V8 still compiles now and then after the
    // warm-up, on its helper thread, and that is most of what moves between two processes.
    for (const [label, figure] of [
      ["main thread", (c: Counted) => c.mainPerCall],
      ["main thread, less the collector", (c: Counted) => c.mainPerCall - c.collectorPerCall],
      ["the collector, on the main thread", (c: Counted) => c.collectorPerCall],
      ["every thread", (c: Counted) => c.perCall],
    ] as const) {
      const mean = (cs: Counted[]) => cs.reduce((sum, c) => sum + figure(c), 0) / cs.length;
      const base = mean(of(list[0]!));
      console.log(`\n${label}:`);
      for (const setting of list) {
        const cs = of(setting);
        const perCall = mean(cs);
        const spread = cs.length > 1 ? ` [${cs.map((c) => thousands(figure(c))).join(", ")}]` : "";
        const over = setting === list[0] ? "" : ` (${signed(perCall - base)}, ${(((perCall - base) / base) * 100).toFixed(1)} % over ${list[0]!.name})`;
        console.log(`  ${setting.name}: ${thousands(perCall)}${over}${spread}`);
      }
    }
    if (top > 0) {
      // By function, the main thread of one process of each setting against one of the first.
      const first = of(list[0]!)[0]!;
      const theirs = byFunction(first);
      for (const c of list.slice(1).map((setting) => of(setting)[0]!)) {
        const mine = byFunction(c);
        const growth = [...new Set([...theirs.keys(), ...mine.keys()])].map((name) => ({ name, delta: (mine.get(name) ?? 0) - (theirs.get(name) ?? 0) }));
        growth.sort((a, b) => b.delta - a.delta);
        console.log(`\n${c.name} over ${first.name}, by function (instructions a call):`);
        for (const g of growth.slice(0, top)) console.log(`  ${signed(g.delta).padStart(7)}  ${g.name}`);
      }
    }
  },
);
