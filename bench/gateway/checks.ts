/**
 * The gateway with its checks on, side by side with a bare undici proxy and direct calls, in one
 * run (`BENCH_ONLY=gateway-checks`; docs/performance.md, "Every check on"):
 *
 * - configurations: direct calls to the fake provider; the bare proxy (bare-proxy.ts); the gateway
 *   with no checks beyond key, model access and routing; with the six guardrails (PII, prompt
 *   injection and content safety, on input and on output, default settings); with usage limits on
 *   the key, its user and its group counted in PostgreSQL; the same counted in Redis; and
 *   everything (the six guardrails and the limits), with either counter store;
 * - payloads: a short prompt (about 40 bytes of text) and a conversation of 20 messages (about
 *   8 KB) whose last message is new on every call and whose 19 before it are the same, as a chat's
 *   next turn is; each non-streamed and streamed (a Responses stream of 20 events). Every prompt
 *   is new on every call (a number at its end), and every answer too (`variedModel`), so that no
 *   guardrail answers a call from a verdict kept for another;
 * - throughput at c=64 (closed loop), with the CPU per call of the process under test;
 * - latency at 1,000 requests/s (open loop), short prompt, non-streamed.
 *
 * The guardrails are workspace-wide: they are created disabled and switched on and off between
 * phases through PATCH, and probes through both gateways show the change before anything is
 * timed. The limits are far above what the run uses: every answer must be a 200 with the whole
 * answer, which the load generator checks. Rounds interleave the configurations: the floor
 * first, then each gateway process's configurations together, the processes taking turns at
 * going first.
 *
 * Processes and cores as in run.ts: this process (load generator, idle management API) and the
 * fake provider on core 0; the bare proxy and both gateways on core 1 (one carries traffic at a time).
 */
import { Pool } from "undici";
import { latencyStats, type LatencyStats } from "../measure.ts";
import { here, sourceRevision, waitUntilReady, waitUntilServed, withHarness } from "./harness.ts";
import { callOnce, closedLoop, openLoop, rotation, shares, statusOf, streamOnce, type Target } from "./load.ts";
import { byteLength, completeAnswer, conversationBody, piiModel, requestBody, streamAnswer, variedModel } from "./payloads.ts";
import { cpuSecondsOf, procAvailable } from "./processes.ts";
import { benchRedis, benchRedisUrl } from "./redis.ts";
import { describeMachine, ms, signed, verdict } from "./report.ts";
import type { GatewayBenchOptions } from "./run.ts";
import { addLimitedKey, configureGateway, expectStatus, gatewayCapacity, providerApiKey } from "./setup.ts";

const kinds = ["pii", "prompt_injection", "content_safety"] as const;

/** Issue 14's goals, on the bench's machine. */
const goals = {
  /** Every configuration's throughput at c=64, as a share of the bare proxy's. */
  shareOfBareProxy: 0.7,
  /** Everything on, at 1,000 requests/s: added over the bare proxy, ms. */
  addedP50Ms: 0.3,
  addedP99Ms: 2,
  /** Everything on: the 20-turn conversation's CPU per call over the short prompt's. */
  conversationOverShort: 1.5,
};

interface Via {
  name: string;
  target: Target;
  pool: Pool;
  /** The process under test, whose CPU is read; none for direct calls. */
  pid: number | undefined;
}

interface Configuration {
  name: string;
  guardrails: boolean;
  via: Via;
}

interface Payload {
  name: string;
  stream: boolean;
  body(i: number): Buffer;
  answerBytes: number;
}

interface Cell {
  calls: number;
  ms: number;
  cpuSeconds: number;
}

export async function runGatewayChecksBench(options: GatewayBenchOptions): Promise<string> {
  if (!procAvailable()) throw new Error("the gateway checks bench reads CPU time from /proc: it runs on Linux only");
  const { log } = options;
  const count = (n: number): number => Math.max(1, Math.round(n * options.scale));
  const plan = {
    concurrency: 64,
    warmup: count(1500),
    /** Per configuration and payload, over the rounds. */
    throughput: count(8000),
    rounds: 4,
    rate: 1000,
    /** Per configuration, over the rounds. */
    latency: count(6000),
    /** Far above what the run reserves: nothing is refused. */
    tokenLimit: 1_000_000_000_000,
    switchDeadlineMs: 10_000,
  };
  const started = performance.now();
  const date = new Date();

  return withHarness(log, async (h) => {
    const { admin, cores, guarded } = h;
    const provider = await h.startProvider();
    log("gateway checks: configuring: keys, limits on two of them (key, user, group), six guardrails (off)");
    const { key: free } = await configureGateway(admin, provider.url);
    const limitedPg = await addLimitedKey(admin, "checks-limit-postgres", plan.tokenLimit);
    const limitedRedis = await addLimitedKey(admin, "checks-limit-redis", plan.tokenLimit);
    const guardrailIds: string[] = [];
    // PII last: a gateway that blocks the PII probes has every earlier change too.
    for (const kind of [...kinds].reverse()) {
      for (const stage of ["input", "output"] as const) {
        guardrailIds.push(String((await expectStatus(admin, "POST", "/v1/gateway/guardrails", 201, { kind, stage, enabled: false })).id));
      }
    }

    // Before the Redis gateway starts, so that its keys are deleted after that gateway has stopped.
    const redis = await benchRedis(h.defer, log, "gateway checks");
    if (!redis) throw new Error(`gateway checks: no Redis at ${benchRedisUrl} (BENCH_REDIS_URL): the Redis configurations cannot be measured`);

    log("gateway checks: starting the bare proxy and two gateways (counters in PostgreSQL, in Redis)");
    const proxy = h.start("bare proxy", ["--expose-gc", ...h.nodeFlags, here("bare-proxy.ts")], cores?.middle, {
      ...process.env,
      BENCH_UPSTREAM: provider.url,
      BENCH_CONNECTIONS: String(gatewayCapacity),
    });
    const proxyUrl = `http://127.0.0.1:${(await guarded(proxy.next("ready"))).port}`;
    const pgGateway = await h.startGateway("gateway-pg");
    const redisGateway = await h.startGateway("gateway-redis", redis.env);

    const via = (name: string, origin: string, secret: string, pid: number | undefined): Via => {
      const pool = new Pool(origin, { connections: plan.concurrency });
      h.defer(() => pool.destroy());
      return { name, target: { name, origin, headers: { "content-type": "application/json", authorization: `Bearer ${secret}` } }, pool, pid };
    };
    const direct = via("direct", provider.url, providerApiKey, undefined);
    const bare = via("bare proxy", proxyUrl, providerApiKey, proxy.pid);
    const pgFree = via("gateway (PostgreSQL counters), no limit", pgGateway.url, free.secret, pgGateway.child.pid);
    const redisFree = via("gateway (Redis counters), no limit", redisGateway.url, free.secret, redisGateway.child.pid);
    const pgLimited = via("gateway (PostgreSQL counters), limited key", pgGateway.url, limitedPg.secret, pgGateway.child.pid);
    const redisLimited = via("gateway (Redis counters), limited key", redisGateway.url, limitedRedis.secret, redisGateway.child.pid);
    const configurations: Configuration[] = [
      { name: "direct", guardrails: false, via: direct },
      { name: "bare proxy", guardrails: false, via: bare },
      { name: "gateway, no checks", guardrails: false, via: pgFree },
      { name: "guardrails", guardrails: true, via: pgFree },
      { name: "limits, PostgreSQL", guardrails: false, via: pgLimited },
      { name: "limits, Redis", guardrails: false, via: redisLimited },
      { name: "everything, PostgreSQL", guardrails: true, via: pgLimited },
      { name: "everything, Redis", guardrails: true, via: redisLimited },
    ];
    // With the guardrails on, the bare proxy and direct calls are measured again: the floor of
    // each phase is read in that phase.
    const inPhase = (on: boolean) => configurations.filter((c) => c.guardrails === on || c.via === direct || c.via === bare);
    const floorName = (on: boolean) => (on ? "bare proxy (guardrails phase)" : "bare proxy");
    // A round's order: direct calls and the bare proxy, then each gateway process's
    // configurations together, the two processes taking turns at going first, and a process's
    // own configurations swapping every other round. A gateway that runs right after the other
    // reads 20–100 µs a call dearer than one that runs after the bare proxy (docs/performance.md,
    // "Order within a run"); with the rounds only rotated, the Redis gateway always came right
    // after the PostgreSQL one.
    const ordered = (on: boolean, round: number): Configuration[] => {
      const phase = inPhase(on);
      const of = (gateway: Via) => rotation(phase.filter((c) => c.via.pid === gateway.pid), Math.floor(round / 2));
      const gateways = round % 2 === 0 ? [...of(pgFree), ...of(redisFree)] : [...of(redisFree), ...of(pgFree)];
      return [...rotation(phase.filter((c) => c.via === direct || c.via === bare), round), ...gateways];
    };

    const shortPrompt = (i: number) => `Say hello in one short sentence. (${i})`;
    const payloads: Payload[] = [
      { name: "short", stream: false, body: (i) => requestBody(variedModel, false, shortPrompt(i)), answerBytes: completeAnswer(variedModel).length },
      { name: "short, streamed", stream: true, body: (i) => requestBody(variedModel, true, shortPrompt(i)), answerBytes: byteLength(streamAnswer(variedModel)) },
      { name: "20 turns", stream: false, body: (i) => conversationBody(variedModel, i), answerBytes: completeAnswer(variedModel).length },
      { name: "20 turns, streamed", stream: true, body: (i) => conversationBody(variedModel, i, true), answerBytes: byteLength(streamAnswer(variedModel)) },
    ];
    const call = (v: Via, p: Payload, body: Buffer): Promise<unknown> => (p.stream ? streamOnce(v.pool, v.target, body, p.answerBytes) : callOnce(v.pool, v.target, body, p.answerBytes));

    for (const [name, v, origin] of [["gateway-pg", pgFree, pgGateway.url], ["gateway-redis", redisFree, redisGateway.url]] as const) {
      await guarded(waitUntilServed(name, async () => void (await call(v, payloads[0]!, payloads[0]!.body(0)))));
      await guarded(waitUntilReady(name, origin));
    }

    // On: a card in the prompt and a card in the answer are each refused (422), through both gateways; off: both answered.
    const inputProbe = requestBody(variedModel, false, "Please charge my card 4111 1111 1111 1111 for the order.");
    const outputProbe = requestBody(piiModel, false, "What is on file?");
    let guardrailsOn = false;
    const switchGuardrails = async (on: boolean): Promise<void> => {
      for (const id of guardrailIds) await expectStatus(admin, "PATCH", `/v1/gateway/guardrails/${id}`, 200, { enabled: on });
      const deadline = performance.now() + plan.switchDeadlineMs;
      for (const v of [pgFree, redisFree]) {
        for (const probe of [inputProbe, outputProbe]) {
          while ((await guarded(statusOf(v.pool, v.target, probe))) !== (on ? 422 : 200)) {
            if (performance.now() > deadline) throw new Error(`${v.name}: the guardrails were not ${on ? "on" : "off"} within ${plan.switchDeadlineMs} ms`);
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        }
      }
      guardrailsOn = on;
    };

    if (cores) {
      h.pinGenerator();
      log(`gateway checks: pinned: load generator and provider on core ${cores.generator}, bare proxy and gateways on core ${cores.middle}`);
    }

    let sequence = 1;
    /** Bodies are made before the clock starts: the 20-turn one takes a while to write. */
    const bodies = (p: Payload, n: number): Buffer[] => Array.from({ length: n }, () => p.body(sequence++));
    const keyOf = (c: Configuration, p: Payload, on: boolean) => `${c.via === bare ? floorName(on) : c.name} · ${p.name}`;

    log(`gateway checks: warm-up, ${plan.warmup} calls per configuration and payload`);
    await h.phase("warm-up", async () => {
      for (const on of [false, true]) {
        await switchGuardrails(on);
        for (const c of inPhase(on)) {
          for (const p of payloads) {
            const batch = bodies(p, plan.warmup);
            let next = 0;
            await guarded(closedLoop(batch.length, plan.concurrency, () => call(c.via, p, batch[next++]!)));
          }
        }
      }
    });

    const cells = new Map<string, Cell>();
    log(`gateway checks: throughput, ${plan.throughput} calls per configuration and payload at c=${plan.concurrency}, ${plan.rounds} rounds`);
    await h.phase("throughput", async () => {
      for (let round = 0; round < plan.rounds; round++) {
        for (const on of rotation([false, true], round)) {
          if (on !== guardrailsOn) await switchGuardrails(on);
          for (const p of rotation(payloads, round)) {
            for (const c of ordered(on, round)) {
              const batch = bodies(p, shares(plan.throughput, plan.rounds)[round]!);
              const cell = cells.get(keyOf(c, p, on)) ?? { calls: 0, ms: 0, cpuSeconds: 0 };
              const before = c.via.pid === undefined ? 0 : cpuSecondsOf(c.via.pid);
              let next = 0;
              cell.ms += await guarded(closedLoop(batch.length, plan.concurrency, () => call(c.via, p, batch[next++]!)));
              cell.cpuSeconds += c.via.pid === undefined ? 0 : cpuSecondsOf(c.via.pid) - before;
              cell.calls += batch.length;
              cells.set(keyOf(c, p, on), cell);
            }
          }
        }
      }
    });

    const latencies = new Map<string, number[]>();
    const short = payloads[0]!;
    log(`gateway checks: latency, ${plan.latency} calls per configuration at ${plan.rate}/s, short prompt, ${plan.rounds} rounds`);
    await h.phase("latency", async () => {
      for (let round = 0; round < plan.rounds; round++) {
        for (const on of rotation([false, true], round)) {
          if (on !== guardrailsOn) await switchGuardrails(on);
          for (const c of ordered(on, round)) {
            const batch = bodies(short, shares(plan.latency, plan.rounds)[round]!);
            let next = 0;
            const run = await guarded(
              openLoop(plan.rate, batch.length, async () => {
                const body = batch[next++]!;
                const start = performance.now();
                await callOnce(c.via.pool, c.via.target, body, short.answerBytes);
                return performance.now() - start;
              }),
            );
            const key = c.via === bare ? floorName(on) : c.name;
            latencies.set(key, [...(latencies.get(key) ?? []), ...run.results]);
          }
        }
      }
    });

    const minutes = ((performance.now() - started) / 60_000).toFixed(1);
    return checksMarkdown({
      header: [
        `Date: ${date.toISOString()}; machine: ${describeMachine()}; source: ${sourceRevision()}; ${minutes} min; ` +
          `pinned: ${cores ? `bare proxy and gateways on core ${cores.middle}, load generator and provider on core ${cores.generator}` : "no"}; ` +
          `gateway Node flags: ${h.nodeFlags.join(" ") || "none"}; log level ${h.logLevel}; ${h.database}; ${redis.version}.`,
        `Bodies: short ${short.body(0).length} B, 20 turns ${conversationBody(variedModel, 0).length} B; answers ${short.answerBytes} B, streamed ${payloads[1]!.answerBytes} B in 20 events. ` +
          `Other load on the machine (cores busy outside the bench): ${h.load.map((l) => `${l.phase} ${l.otherCores.toFixed(2)}`).join(", ")}.`,
      ],
      configurations,
      payloads,
      cells,
      latencies,
      keyOf,
      floorName,
      concurrency: plan.concurrency,
      rate: plan.rate,
    });
  });
}

interface Results {
  header: string[];
  configurations: Configuration[];
  payloads: Payload[];
  cells: Map<string, Cell>;
  latencies: Map<string, number[]>;
  keyOf(c: Configuration, p: Payload, on: boolean): string;
  floorName(on: boolean): string;
  concurrency: number;
  rate: number;
}

function checksMarkdown(r: Results): string {
  const perSecond = (cell: Cell | undefined) => (cell ? (cell.calls / cell.ms) * 1000 : Number.NaN);
  const cpuUs = (cell: Cell | undefined) => (cell && cell.cpuSeconds > 0 ? (cell.cpuSeconds / cell.calls) * 1e6 : Number.NaN);
  const cellOf = (c: Configuration, p: Payload) => r.cells.get(r.keyOf(c, p, c.guardrails));
  const floorOf = (c: Configuration, p: Payload) => r.cells.get(`${r.floorName(c.guardrails)} · ${p.name}`);
  const share = (c: Configuration, p: Payload) => perSecond(cellOf(c, p)) / perSecond(floorOf(c, p));
  const lines = ["## Every check on", "", ...r.header, ""];

  lines.push(`### Throughput at c=${r.concurrency}`, "", "Requests per second, the share of the bare proxy's in the same phase, and the CPU per call of the process under test (µs).", "");
  lines.push(`| configuration | ${r.payloads.map((p) => `${p.name}: req/s | share | µs CPU`).join(" | ")} |`);
  lines.push(`|---|${r.payloads.map(() => "--:|--:|--:").join("|")}|`);
  const measured = r.configurations.filter((c) => c.name !== "bare proxy");
  const rows: Configuration[] = [...r.configurations.filter((c) => c.name === "bare proxy"), ...measured];
  for (const c of rows) {
    const cellsOf = r.payloads.map((p) => {
      const cell = cellOf(c, p);
      return `${Math.round(perSecond(cell))} | ${share(c, p).toFixed(2)} | ${Number.isNaN(cpuUs(cell)) ? "—" : Math.round(cpuUs(cell))}`;
    });
    lines.push(`| ${c.name} | ${cellsOf.join(" | ")} |`);
  }
  const gatewayConfigurations = r.configurations.filter((c) => c.via.pid !== undefined && c.name !== "bare proxy");
  const misses = gatewayConfigurations.flatMap((c) => r.payloads.filter((p) => share(c, p) < goals.shareOfBareProxy).map((p) => `${c.name} · ${p.name} ${share(c, p).toFixed(2)}`));
  lines.push("");
  lines.push(
    `- Goal: every configuration ≥ ${goals.shareOfBareProxy}× the bare proxy at c=${r.concurrency}: ${verdict(misses.length === 0)}` +
      (misses.length > 0 ? ` (under it: ${misses.join("; ")}).` : "."),
  );
  const everything = r.configurations.filter((c) => c.name.startsWith("everything"));
  for (const c of everything) {
    const [shortPlain, , turnsPlain] = r.payloads;
    const ratio = cpuUs(cellOf(c, turnsPlain!)) / cpuUs(cellOf(c, shortPlain!));
    lines.push(`- Goal: ${c.name}, the 20-turn conversation ≤ ${goals.conversationOverShort}× the short prompt's CPU per call: **${ratio.toFixed(2)}×** (${verdict(ratio <= goals.conversationOverShort)}).`);
  }

  lines.push("", `### Latency at ${r.rate} requests/s, short prompt, non-streamed (ms)`, "");
  lines.push("| configuration | calls | p50 | p90 | p99 | mean | added p50 over the bare proxy | added p99 |", "|---|--:|--:|--:|--:|--:|--:|--:|");
  const stats = new Map<string, LatencyStats>([...r.latencies].map(([name, samples]) => [name, latencyStats(samples)]));
  for (const [name, s] of stats) {
    const config = r.configurations.find((c) => c.name === name);
    const floor = stats.get(r.floorName(config?.guardrails ?? name.includes("guardrails phase")));
    const added = floor && !name.startsWith("bare proxy") && name !== "direct" ? `${signed(s.p50 - floor.p50)} | ${signed(s.p99 - floor.p99)}` : "— | —";
    lines.push(`| ${name} | ${s.count} | ${ms(s.p50)} | ${ms(s.p90)} | ${ms(s.p99)} | ${ms(s.mean)} | ${added} |`);
  }
  const floor = stats.get(r.floorName(true));
  for (const c of everything) {
    const s = stats.get(c.name);
    if (!s || !floor) continue;
    const p50 = s.p50 - floor.p50;
    const p99 = s.p99 - floor.p99;
    lines.push(
      `- Goal: ${c.name}, added p50 ≤ ${goals.addedP50Ms} ms and p99 ≤ ${goals.addedP99Ms} ms over the bare proxy: ` +
        `p50 ${signed(p50)} (${verdict(p50 <= goals.addedP50Ms)}), p99 ${signed(p99)} (${verdict(p99 <= goals.addedP99Ms)}).`,
    );
  }
  lines.push("");
  return lines.join("\n");
}
