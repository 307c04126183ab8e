/**
 * What guardrails cost at each stage, side by side with none, in one run
 * (`BENCH_ONLY=gateway-guardrail-stages`; docs/performance.md, "Guardrails by stage"):
 *
 * - input guardrails: the three (PII, prompt injection, content safety) on the caller's ~1 KB of
 *   prose, new on every call (a number at its end), non-streamed;
 * - output guardrails: the three on a ~1 KB answer, non-streamed;
 * - streamed-output guardrails: the three on the same answer streamed in deltas of 4 characters
 *   (about 256 events, as a model's tokens come), held back by the default window (64);
 * - input guardrails on a conversation of 20 messages (about 8 KB) whose last message is new on
 *   every call, as a chat's next turn is: with the verdicts on earlier messages kept (the
 *   default), and through a second gateway process that keeps none (WARDEN_GUARDRAIL_CACHE_ENTRIES=0);
 * each against the same request with no guardrail on. Requests one at a time (c=1), in rounds that
 * alternate the guardrails' state (off, input on, output on; the order rotates). The six guardrails are created disabled and switched through PATCH; after each
 * switch, probes show that the gateway has the change before anything is timed. Nothing measured is
 * blocked or redacted: the bench checks every answer's length.
 *
 * Processes and cores as in run.ts: this process and the fake provider on core 0, the gateway on core 1.
 */
import { Pool } from "undici";
import { latencyStats } from "../measure.ts";
import { sourceRevision, waitUntilReady, waitUntilServed, withHarness } from "./harness.ts";
import { callOnce, closedLoop, rotation, shares, statusOf, timed, type Target } from "./load.ts";
import { benchModel, byteLength, completeAnswer, conversationBody, piiModel, proseModel, requestBody, streamAnswer } from "./payloads.ts";
import { cpuSecondsOf, procAvailable } from "./processes.ts";
import { describeMachine } from "./report.ts";
import { prose } from "./prose.ts";
import type { GatewayBenchOptions } from "./run.ts";
import { configureGateway, expectStatus } from "./setup.ts";

const kinds = ["pii", "prompt_injection", "content_safety"] as const;
type State = "off" | "input" | "output";

interface Case {
  name: string;
  state: State;
  /** The case with the guardrails off that this one is read against. */
  baseline?: string;
  /** The body of the i-th call. */
  body: (i: number) => Buffer;
  answerBytes: number;
  via: Via;
}

interface Via {
  target: Target;
  pool: Pool;
  pid: number;
}

const conversation = (i: number): Buffer => conversationBody(proseModel, i);

interface Cell {
  samples: number[];
  cpuSeconds: number;
}

export async function runGuardrailStagesBench(options: GatewayBenchOptions): Promise<string> {
  if (!procAvailable()) throw new Error("the guardrail stages bench reads CPU time from /proc: it runs on Linux only");
  const { log } = options;
  const count = (n: number): number => Math.max(1, Math.round(n * options.scale));
  const plan = { warmup: count(300), calls: count(2400), rounds: 6, switchDeadlineMs: 10_000 };
  const started = performance.now();
  const date = new Date();

  return withHarness(log, async (h) => {
    const { admin, cores, guarded } = h;
    const { url: providerUrl } = await h.startProvider();
    const { key } = await configureGateway(admin, providerUrl);
    const ids = new Map<State, string[]>([["input", []], ["output", []]]);
    for (const stage of ["input", "output"] as const) {
      for (const kind of kinds) {
        const created = await expectStatus(admin, "POST", "/v1/gateway/guardrails", 201, { kind, stage, enabled: false });
        ids.get(stage)!.push(String(created.id));
      }
    }
    const gateway = await h.startGateway("gateway");
    const uncached = await h.startGateway("gateway-uncached", { WARDEN_GUARDRAIL_CACHE_ENTRIES: "0" });
    const via = (name: string, process: { url: string; child: { pid: number } }): Via => {
      const pool = new Pool(process.url, { connections: 1 });
      h.defer(() => pool.destroy());
      return { target: { name, origin: process.url, headers: { "content-type": "application/json", authorization: `Bearer ${key.secret}` } }, pool, pid: process.child.pid };
    };
    const main = via("gateway", gateway);
    const other = via("gateway, no verdicts kept", uncached);

    const prompt = prose(1024);
    const plain = completeAnswer(proseModel).length;
    const streamed = byteLength(streamAnswer(proseModel));
    const fixed = (body: Buffer) => () => body;
    const cases: Case[] = [
      // A prompt new on every call, as a chat's first turn is: no verdict is kept for it.
      { name: "none", state: "off", body: (i) => requestBody(proseModel, false, `${prompt} (question ${i})`), answerBytes: plain, via: main },
      { name: "input guardrails", state: "input", baseline: "none", body: (i) => requestBody(proseModel, false, `${prompt} (question ${i})`), answerBytes: plain, via: main },
      { name: "output guardrails", state: "output", baseline: "none", body: fixed(requestBody(proseModel, false, prompt)), answerBytes: plain, via: main },
      { name: "none, streamed", state: "off", body: fixed(requestBody(proseModel, true, prompt)), answerBytes: streamed, via: main },
      { name: "output guardrails, streamed", state: "output", baseline: "none, streamed", body: fixed(requestBody(proseModel, true, prompt)), answerBytes: streamed, via: main },
      { name: "none, 20 turns", state: "off", body: conversation, answerBytes: plain, via: main },
      { name: "input guardrails, 20 turns, verdicts kept", state: "input", baseline: "none, 20 turns", body: conversation, answerBytes: plain, via: main },
      { name: "input guardrails, 20 turns, none kept", state: "input", baseline: "none, 20 turns", body: conversation, answerBytes: plain, via: other },
    ];

    for (const [name, v, origin] of [["gateway", main, gateway.url], ["gateway, no verdicts kept", other, uncached.url]] as const) {
      await guarded(waitUntilServed(name, () => callOnce(v.pool, v.target, cases[0]!.body(0), plain)));
      await guarded(waitUntilReady(name, origin));
    }

    // A state is on once an input probe (a card in the prompt) and an output probe (a card in the
    // answer) are each answered as it says.
    const inputProbe = requestBody(benchModel, false, "Please charge my card 4111 1111 1111 1111 for the order.");
    const outputProbe = requestBody(piiModel, false, "What is on file?");
    let state: State = "off";
    const switchTo = async (next: State): Promise<void> => {
      for (const stage of ["input", "output"] as const) {
        for (const id of ids.get(stage)!) await expectStatus(admin, "PATCH", `/v1/gateway/guardrails/${id}`, 200, { enabled: stage === next });
      }
      const deadline = performance.now() + plan.switchDeadlineMs;
      for (const [probe, blockedIn] of [[inputProbe, "input"], [outputProbe, "output"]] as const) {
        const wanted = next === blockedIn ? 422 : 200;
        for (const v of [main, other]) while ((await guarded(statusOf(v.pool, v.target, probe))) !== wanted) {
          if (performance.now() > deadline) throw new Error(`the gateway did not switch its guardrails to "${next}" within ${plan.switchDeadlineMs} ms`);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }
      state = next;
    };

    if (cores) h.pinGenerator();
    const cells = new Map<string, Cell>(cases.map((c) => [c.name, { samples: [], cpuSeconds: 0 }]));
    const states: State[] = ["off", "input", "output"];
    log(`gateway guardrail stages: warm-up, ${plan.warmup} calls per case`);
    await h.phase("warm-up", async () => {
      for (const s of states) {
        await switchTo(s);
        for (const c of cases.filter((x) => x.state === s)) {
          let i = 0;
          await closedLoop(plan.warmup, 1, () => callOnce(c.via.pool, c.via.target, c.body(i++), c.answerBytes));
        }
      }
    });
    log(`gateway guardrail stages: ${plan.calls} calls per case at c=1, ${plan.rounds} rounds`);
    await h.phase("measured", async () => {
      for (let round = 0; round < plan.rounds; round++) {
        for (const s of rotation(states, round)) {
          if (s !== state) await switchTo(s);
          for (const c of rotation(cases.filter((x) => x.state === s), round)) {
            const cell = cells.get(c.name)!;
            const before = cpuSecondsOf(c.via.pid);
            // Bodies are made before the clock starts: the 20-turn one takes a while to write.
            const bodies = Array.from({ length: shares(plan.calls, plan.rounds)[round]! }, (_, k) => c.body(plan.warmup + round * plan.calls + k));
            let next = 0;
            await guarded(closedLoop(bodies.length, 1, timed(() => callOnce(c.via.pool, c.via.target, bodies[next++]!, c.answerBytes), cell.samples)));
            cell.cpuSeconds += cpuSecondsOf(c.via.pid) - before;
          }
        }
      }
    });

    const rows = cases.map((c) => {
      const cell = cells.get(c.name)!;
      const stats = latencyStats(cell.samples);
      const cpuUs = (cell.cpuSeconds / cell.samples.length) * 1e6;
      const base = c.baseline ? cells.get(c.baseline)! : undefined;
      const baseStats = base ? latencyStats(base.samples) : undefined;
      const added = base && baseStats ? { p50: stats.p50 - baseStats.p50, cpuUs: cpuUs - (base.cpuSeconds / base.samples.length) * 1e6 } : undefined;
      return `| ${c.name} | ${cell.samples.length} | ${stats.p50.toFixed(3)} | ${stats.p99.toFixed(3)} | ${added ? `+${added.p50.toFixed(3)}` : "—"} | ${cpuUs.toFixed(0)} | ${added ? `+${added.cpuUs.toFixed(0)}` : "—"} |`;
    });
    const minutes = ((performance.now() - started) / 60_000).toFixed(1);
    return [
      "## Guardrails by stage",
      "",
      `Date: ${date.toISOString()}; machine: ${describeMachine()}; source: ${sourceRevision()}; ${minutes} min; ` +
        `gateway pinned: ${cores ? `core ${cores.middle} (load generator and provider on core ${cores.generator})` : "no"}.`,
      `Prompt: ${Buffer.byteLength(prompt)} B of prose (20 turns: ${conversation(0).length} B of body); answer: ${prose(1024).length} characters, streamed in ${streamAnswer(proseModel).length} events. Other load: ` +
        h.load.map((l) => `${l.phase} ${l.otherCores.toFixed(2)} cores`).join(", ") + ".",
      "",
      "| case (c=1) | calls | p50 ms | p99 ms | added p50 ms | gateway CPU µs per call | added CPU µs |",
      "|---|--:|--:|--:|--:|--:|--:|",
      ...rows,
      "",
    ].join("\n");
  });
}
