/**
 * What guardrails cost at each stage, side by side with none, in one run
 * (`BENCH_ONLY=gateway-guardrail-stages`; docs/performance.md, "Guardrails by stage"):
 *
 * - input guardrails: the three (PII, prompt injection, content safety) on the caller's ~1 KB of
 *   prose, non-streamed;
 * - output guardrails: the three on a ~1 KB answer, non-streamed;
 * - streamed-output guardrails: the three on the same answer streamed in deltas of 4 characters
 *   (about 256 events, as a model's tokens come), held back by the default window (64);
 * each against the same request with no guardrail on. Requests one at a time (c=1), through one
 * gateway process, in rounds that alternate the guardrails' state (off, input on, output on; the
 * order rotates). The six guardrails are created disabled and switched through PATCH; after each
 * switch, probes show that the gateway has the change before anything is timed. Nothing measured is
 * blocked or redacted: the bench checks every answer's length.
 *
 * Processes and cores as in run.ts: this process and the fake provider on core 0, the gateway on core 1.
 */
import { Pool } from "undici";
import { latencyStats } from "../measure.ts";
import { machine } from "../report.ts";
import { sourceRevision, waitUntilReady, waitUntilServed, withHarness } from "./harness.ts";
import { callOnce, closedLoop, rotation, shares, statusOf, timed, type Target } from "./load.ts";
import { benchModel, byteLength, completeAnswer, piiModel, proseModel, requestBody, streamAnswer } from "./payloads.ts";
import { cpuSecondsOf, procAvailable } from "./processes.ts";
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
  body: Buffer;
  answerBytes: number;
}

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
    const target: Target = { name: "gateway", origin: gateway.url, headers: { "content-type": "application/json", authorization: `Bearer ${key.secret}` } };
    const pool = new Pool(gateway.url, { connections: 1 });
    h.defer(() => pool.destroy());

    const prompt = prose(1024);
    const plain = completeAnswer(proseModel).length;
    const streamed = byteLength(streamAnswer(proseModel));
    const cases: Case[] = [
      { name: "none", state: "off", body: requestBody(proseModel, false, prompt), answerBytes: plain },
      { name: "input guardrails", state: "input", baseline: "none", body: requestBody(proseModel, false, prompt), answerBytes: plain },
      { name: "output guardrails", state: "output", baseline: "none", body: requestBody(proseModel, false, prompt), answerBytes: plain },
      { name: "none, streamed", state: "off", body: requestBody(proseModel, true, prompt), answerBytes: streamed },
      { name: "output guardrails, streamed", state: "output", baseline: "none, streamed", body: requestBody(proseModel, true, prompt), answerBytes: streamed },
    ];

    await guarded(waitUntilServed("gateway", () => callOnce(pool, target, cases[0]!.body, plain)));
    await guarded(waitUntilReady("gateway", gateway.url));

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
        while ((await guarded(statusOf(pool, target, probe))) !== wanted) {
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
        for (const c of cases.filter((x) => x.state === s)) await closedLoop(plan.warmup, 1, () => callOnce(pool, target, c.body, c.answerBytes));
      }
    });
    log(`gateway guardrail stages: ${plan.calls} calls per case at c=1, ${plan.rounds} rounds`);
    await h.phase("measured", async () => {
      for (let round = 0; round < plan.rounds; round++) {
        for (const s of rotation(states, round)) {
          if (s !== state) await switchTo(s);
          for (const c of rotation(cases.filter((x) => x.state === s), round)) {
            const cell = cells.get(c.name)!;
            const before = cpuSecondsOf(gateway.child.pid);
            await guarded(closedLoop(shares(plan.calls, plan.rounds)[round]!, 1, timed(() => callOnce(pool, target, c.body, c.answerBytes), cell.samples)));
            cell.cpuSeconds += cpuSecondsOf(gateway.child.pid) - before;
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
      `Prompt: ${Buffer.byteLength(prompt)} B of prose; answer: ${prose(1024).length} characters, streamed in ${streamAnswer(proseModel).length} events. Other load: ` +
        h.load.map((l) => `${l.phase} ${l.otherCores.toFixed(2)} cores`).join(", ") + ".",
      "",
      "| case (c=1) | calls | p50 ms | p99 ms | added p50 ms | gateway CPU µs per call | added CPU µs |",
      "|---|--:|--:|--:|--:|--:|--:|",
      ...rows,
      "",
    ].join("\n");
  });
}

function describeMachine(): string {
  const m = machine();
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB.toFixed(1)} GiB, ${m.platform}, Node ${m.node}`;
}
