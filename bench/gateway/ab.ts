/**
 * Two versions of the gateway side by side in one run (`npm run bench:ab`): this checkout's and
 * another's (BENCH_AB_BASE, a directory with the same layout, such as a `git worktree` of the
 * commit before a change), both on the core under test with the bare proxy, taking turns in
 * rounds: the bare proxy, then the two gateways, each first in every other round. Between two
 * runs, a gateway process's CPU per call moves by ±20 % on the machines this bench has met
 * (docs/performance.md, "Every check on"); the mean difference of two processes taking turns in
 * one run moves by about ±10 µs. A change worth less than the first is read here.
 *
 * Settings (environment): BENCH_AB_BASE (required); BENCH_AB_CALL, the call made: `stream` (a
 * Responses stream of 20 events, the default), `plain` (the same, not streamed), `conversation`
 * (a 20-message conversation of 8 KB, not streamed) or `translated` (a Messages stream,
 * translated to the provider's Responses and back); BENCH_AB_GUARDRAILS, stages
 * whose three guardrails are on (`input`, `output`, or `input,output`; none by default);
 * BENCH_AB_BASE_ENV, settings for the BENCH_AB_BASE gateway only (`WARDEN_ACCESS_LOG=false,…`:
 * with BENCH_AB_BASE naming this checkout, a setting's cost is read the same way);
 * BENCH_AB_BASE_FLAGS, Node flags for the BENCH_AB_BASE gateway in place of the harness's
 * (`--max-semi-space-size=16 --v8-pool-size=0`: a Node flag's cost, read the same way);
 * BENCH_AB_CALLS per process and round (3,000), BENCH_AB_ROUNDS (12, even); BENCH_AB_CONCURRENCY,
 * calls in flight (64; 1 reads what a change costs a gateway that is not busy); BENCH_AB_WARMUP_MS
 * (6,000): at least how long each gateway's warm-up lasts, past the span queue's 5 s delay, so that
 * a traced gateway's export thread has started before anything is counted; BENCH_AB_RUNS (1):
 * runs of fresh gateway processes, the one started first alternating from run to run. Both
 * gateways read one database, this checkout's schema. Prints each round, then per run the median
 * CPU per call of each process, each gateway's by thread (user and system apart), and the two
 * gateways' difference round by round and its mean, and with several runs the mean of the runs
 * and its standard error.
 *
 * One run cannot read a few per cent: two gateways of the same code and settings measured −1 and
 * −36 µs a call apart in two runs of one hour, and the gateway started first read 7–11 µs a call
 * cheaper on average (docs/performance.md, "Observability cost"). The process, not the round, is
 * what varies, so a small cost wants several runs, each with its own processes.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { Pool } from "undici";
import { here, withHarness, waitUntilServed, type Harness } from "./harness.ts";
import { callOnce, closedLoop, responsesPath, streamOnce, type Target } from "./load.ts";
import { conversationBody, messagesRequestBody, requestBody, variedModel } from "./payloads.ts";
import { cpuSecondsOf, memoryOf, threadCpuOf, type BenchChild } from "./processes.ts";
import { configureGateway, expectStatus, gatewayCapacity, providerApiKey } from "./setup.ts";

const base = process.env.BENCH_AB_BASE;
if (!base || !existsSync(path.join(base, "src", "main.ts"))) {
  throw new Error("BENCH_AB_BASE must name another checkout of Warden (a directory with src/main.ts), for example a git worktree");
}
const call = process.env.BENCH_AB_CALL ?? "stream";
if (!["stream", "plain", "conversation", "translated"].includes(call)) throw new Error(`BENCH_AB_CALL must be stream, plain, conversation or translated, got "${call}"`);
const stages = (process.env.BENCH_AB_GUARDRAILS ?? "").split(",").filter(Boolean);
if (stages.some((s) => s !== "input" && s !== "output")) throw new Error(`BENCH_AB_GUARDRAILS must list input and/or output, got "${process.env.BENCH_AB_GUARDRAILS}"`);
const baseEnv = Object.fromEntries(
  (process.env.BENCH_AB_BASE_ENV ?? "")
    .split(",")
    .filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf("=");
      if (at < 1) throw new Error(`BENCH_AB_BASE_ENV must be a list of NAME=value, got "${pair}"`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
);
const baseFlags = process.env.BENCH_AB_BASE_FLAGS?.split(/\s+/).filter(Boolean);
const stream = call === "stream" || call === "translated";
const calls = Number(process.env.BENCH_AB_CALLS ?? "3000");
const rounds = Number(process.env.BENCH_AB_ROUNDS ?? "12");
if (!Number.isInteger(rounds) || rounds < 2 || rounds % 2 !== 0) throw new Error(`BENCH_AB_ROUNDS must be an even number, got "${process.env.BENCH_AB_ROUNDS}"`);
const warmupMs = Number(process.env.BENCH_AB_WARMUP_MS ?? "6000");
if (!Number.isFinite(warmupMs) || warmupMs < 0) throw new Error(`BENCH_AB_WARMUP_MS must be a number of milliseconds, got "${process.env.BENCH_AB_WARMUP_MS}"`);
const runs = Number(process.env.BENCH_AB_RUNS ?? "1");
if (!Number.isInteger(runs) || runs < 1) throw new Error(`BENCH_AB_RUNS must be a positive integer, got "${process.env.BENCH_AB_RUNS}"`);
const concurrency = Number(process.env.BENCH_AB_CONCURRENCY ?? "64");
if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`BENCH_AB_CONCURRENCY must be a positive integer, got "${process.env.BENCH_AB_CONCURRENCY}"`);

interface Side {
  name: string;
  pid: number;
  /** The gateways' processes, asked for a collection before their memory is read. */
  child?: BenchChild;
  pool: Pool;
  target: Target;
  body(i: number): Buffer;
  /** Learned from the first answer: every later one must be as long. */
  bytes: number;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const ourName = "gateway (this checkout)";
const theirName = "gateway (BENCH_AB_BASE)";

/** The workspace the gateways serve: a key, and the guardrails of BENCH_AB_GUARDRAILS. */
async function configure(h: Harness, providerUrl: string): Promise<string> {
  const { key } = await configureGateway(h.admin, providerUrl);
  for (const kind of ["pii", "prompt_injection", "content_safety"]) {
    for (const stage of stages) await expectStatus(h.admin, "POST", "/v1/gateway/guardrails", 201, { kind, stage, enabled: true });
  }
  return key.secret;
}

const prompt = (i: number) => `Say hello in one short sentence. (${i})`;

/** A process under load, ready once it has answered one call. */
async function sideOf(h: Harness, name: string, origin: string, pid: number, secret: string, child?: BenchChild): Promise<Side> {
  const messages = call === "translated" && child !== undefined;
  const side: Side = {
    name,
    pid,
    child,
    pool: new Pool(origin, { connections: concurrency }),
    target: {
      name,
      origin,
      path: messages ? "/v1/messages" : responsesPath,
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}`, ...(messages ? { "anthropic-version": "2023-06-01" } : {}) },
    },
    body: (i) =>
      messages ? messagesRequestBody(variedModel, stream, prompt(i)) : call === "conversation" ? conversationBody(variedModel, i) : requestBody(variedModel, stream, prompt(i)),
    bytes: Number.NaN,
  };
  h.defer(() => side.pool.destroy());
  side.bytes = await h.guarded(firstAnswerBytes(side));
  return side;
}

async function bareProxy(h: Harness, providerUrl: string): Promise<Side> {
  const proxy = h.start("bare proxy", ["--expose-gc", ...h.nodeFlags, here("bare-proxy.ts")], h.cores?.middle, {
    ...process.env,
    BENCH_UPSTREAM: providerUrl,
    BENCH_CONNECTIONS: String(gatewayCapacity),
  });
  const url = `http://127.0.0.1:${(await h.guarded(proxy.next("ready"))).port}`;
  return sideOf(h, "bare proxy", url, proxy.pid, providerApiKey);
}

/** The two gateways, started in the order asked: [this checkout's, BENCH_AB_BASE's]. */
async function gateways(h: Harness, secret: string, theirsFirst: boolean): Promise<[Side, Side]> {
  const startOurs = () => h.startGateway(ourName);
  const startTheirs = () => h.startGateway(theirName, baseEnv, baseFlags ?? h.nodeFlags, base);
  let ours, theirs;
  if (theirsFirst) {
    theirs = await startTheirs();
    ours = await startOurs();
  } else {
    ours = await startOurs();
    theirs = await startTheirs();
  }
  return [await sideOf(h, ourName, ours.url, ours.child.pid, secret, ours.child), await sideOf(h, theirName, theirs.url, theirs.child.pid, secret, theirs.child)];
}

/** One call, retried until the process serves; the length of its answer. */
async function firstAnswerBytes(s: Side): Promise<number> {
  let bytes = 0;
  await waitUntilServed(s.name, async () => {
    const res = await s.pool.request({ method: "POST", path: s.target.path ?? responsesPath, headers: s.target.headers, body: s.body(0) });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${s.name}: ${res.statusCode} ${text.slice(0, 300)}`);
    bytes = Buffer.byteLength(text);
  });
  return bytes;
}

/** Each thread's CPU between two readings, in µs a call, user and system apart; threads under 0.5 µs left out. */
function threadShares(before: ReturnType<typeof threadCpuOf>, after: ReturnType<typeof threadCpuOf>, callCount: number): string {
  const parts: string[] = [];
  for (const [name, now] of after) {
    const then = before.get(name) ?? { user: 0, system: 0 };
    const user = ((now.user - then.user) / callCount) * 1e6;
    const system = ((now.system - then.system) / callCount) * 1e6;
    if (user + system >= 0.5) parts.push(`${name} ${(user + system).toFixed(1)} (user ${user.toFixed(1)}, system ${system.toFixed(1)})`);
  }
  return `µs CPU per call by thread over the rounds: ${parts.join("; ")}`;
}

const signed = (us: number) => `${us >= 0 ? "+" : ""}${us.toFixed(0)}`;

await withHarness(
  (message) => console.error(`[ab] ${message}`),
  async (h) => {
    const provider = await h.startProvider();
    const secret = await configure(h, provider.url);
    const bare = await bareProxy(h, provider.url);
    let sequence = 1;
    const once = (s: Side) => (stream ? streamOnce : callOnce)(s.pool, s.target, s.body(sequence++), s.bytes);
    h.pinGenerator();
    const call_ = `${call}${stages.length > 0 ? `, guardrails on ${stages.join(" and ")}` : ""}`;
    console.log(`Call: ${call_}; ${calls} calls per process and round at c=${concurrency}, ${rounds} rounds, ${runs} run(s); BENCH_AB_BASE=${base}${process.env.BENCH_AB_BASE_ENV ? ` with ${process.env.BENCH_AB_BASE_ENV}` : ""}${baseFlags ? `, its flags ${baseFlags.join(" ")} (this checkout's ${h.nodeFlags.join(" ")})` : ""}`);
    const means: number[] = [];
    for (let run = 0; run < runs; run++) {
      const theirsFirst = run % 2 === 1;
      const [ours, theirs] = await gateways(h, secret, theirsFirst);
      const all = [bare, ours, theirs];
      // Each gateway's warm-up lasts long enough for a traced one's span-export thread to start
      // (with its first export, after the span queue's delay): otherwise its start, a new isolate
      // loading the SDK's exporter, is counted in its first round.
      for (const s of all) {
        const until = s === bare ? 0 : Date.now() + warmupMs;
        do {
          await h.guarded(closedLoop(Math.min(calls, 1500), concurrency, () => once(s)));
        } while (Date.now() < until);
      }
      const cpu = new Map<string, number[]>(all.map((s) => [s.name, []]));
      const threadsBefore = [ours, theirs].map((s) => threadCpuOf(s.pid));
      for (let round = 0; round < rounds; round++) {
        // The bare proxy first, then the two gateways, each first in every other round: a process
        // that runs twice in a row (the last of a round and the first of the next) finds its caches
        // warm, and reads cheaper than one that follows another process.
        for (const s of round % 2 === 0 ? [bare, ours, theirs] : [bare, theirs, ours]) {
          const before = cpuSecondsOf(s.pid);
          const ms = await h.guarded(closedLoop(calls, concurrency, () => once(s)));
          const us = ((cpuSecondsOf(s.pid) - before) / calls) * 1e6;
          cpu.get(s.name)!.push(us);
          console.error(`[ab] run ${run + 1}, round ${round + 1}: ${s.name}: ${Math.round(calls / (ms / 1000))} req/s, ${us.toFixed(0)} µs CPU per call`);
        }
      }
      console.log(`Run ${run + 1} (${theirsFirst ? "BENCH_AB_BASE's" : "this checkout's"} gateway started first):`);
      for (const [name, xs] of cpu) console.log(`${name}: median ${median(xs).toFixed(0)} µs CPU per call (rounds: ${xs.map((x) => x.toFixed(0)).join(", ")})`);
      // Where each gateway's CPU went over the rounds, thread by thread: a cost that callgrind's
      // count of the main thread misses (another thread's, or the kernel's) shows here.
      [ours, theirs].forEach((s, i) => console.log(`${s.name}: ${threadShares(threadsBefore[i]!, threadCpuOf(s.pid), calls * rounds)}`));
      // What the young generation's size (BENCH_AB_BASE_FLAGS) costs in memory: RSS once the load
      // is over and a full collection has run, and its peak.
      for (const s of [ours, theirs]) {
        await h.guarded(s.child!.ask({ type: "gc", flavor: "regular" }, "gc-done"));
        const { rss, peak } = memoryOf(s.pid);
        console.log(`${s.name}: RSS after the run and a full collection ${(rss / 1e6).toFixed(1)} MB, peak ${(peak / 1e6).toFixed(1)} MB`);
      }
      // Each round's two gateways ran next to each other: their difference is read round by
      // round, and averaged over pairs of rounds. The first gateway of a round reads cheaper than
      // the second (by 20–90 µs a call when both run the same code: it ran last in the round
      // before, and only the bare proxy ran in between), and each is first in half of the rounds.
      const oursCpu = cpu.get(ourName)!;
      const theirsCpu = cpu.get(theirName)!;
      const differences = oursCpu.map((us, i) => us - theirsCpu[i]!);
      const mean = differences.reduce((sum, d) => sum + d, 0) / differences.length;
      means.push(mean);
      console.log(
        `This checkout over BENCH_AB_BASE, round by round: mean ${signed(mean)} µs CPU per call ` +
          `(${((mean / median(theirsCpu)) * 100).toFixed(1)} %; rounds: ${differences.map(signed).join(", ")})`,
      );
      for (const s of [ours, theirs]) {
        await s.pool.destroy();
        await h.retire(s.child!);
      }
    }
    if (runs > 1) {
      const mean = means.reduce((sum, m) => sum + m, 0) / runs;
      const sd = Math.sqrt(means.reduce((sum, m) => sum + (m - mean) ** 2, 0) / (runs - 1));
      console.log(
        `This checkout over BENCH_AB_BASE, over ${runs} runs: mean ${signed(mean)} µs CPU per call, ` +
          `standard error ${(sd / Math.sqrt(runs)).toFixed(1)} (runs: ${means.map(signed).join(", ")})`,
      );
    }
  },
);
