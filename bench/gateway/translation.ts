/**
 * What translating between client formats and provider kinds costs the gateway
 * (`BENCH_ONLY=gateway-translation`; see docs/performance.md, "Translation cost").
 *
 * 1. In process, no network: the gateway's own work on one call's bodies, per call, in µs. Pass-through
 *    (a responses client to the OpenAI-style provider): the request parsed as the gateway parses it
 *    and forwarded as it came; the answer parsed for its usage; a stream split into events and
 *    metered. Translated (an Anthropic messages client to the same provider): the same parse, then
 *    `translateRequest` (messages → responses), the answer read (`readAnswer`) and written back
 *    (`writeAnswer`, then JSON text), or each stream event split, read (`reader.read`), metered and
 *    written (`writer.write`). Many iterations after a warm-up, in rounds that alternate the order.
 * 2. End to end, side by side in one run, through one gateway process (core 1 when pinned), at the
 *    payload size of the gateway section: the bare undici proxy to the fake provider (responses),
 *    responses pass-through, chat completions pass-through, and messages → responses, each
 *    non-streamed and streamed, closed loop at c=64 in rounds that rotate the variants.
 */
import { Pool } from "undici";
import { formats, translateRequest } from "../../src/gateway/formats/translate.ts";
import { SseSplitter } from "../../src/gateway/providers/sse.ts";
import { parseAnswer, usageOfAnswer } from "../../src/gateway/usage/provider-usage.ts";
import { StreamMeter } from "../../src/gateway/usage/stream-meter.ts";
import { latencyStats, type LatencyStats } from "../measure.ts";
import { machine } from "../report.ts";
import { here, sourceRevision, waitUntilServed, withHarness } from "./harness.ts";
import { callOnce, closedLoop, rotation, shares, streamOnce, type Target } from "./load.ts";
import {
  benchModel,
  byteLength,
  chatCompleteAnswer,
  chatRequestBody,
  chatStreamAnswer,
  completeAnswer,
  messagesRequestBody,
  requestBody,
  streamAnswer,
} from "./payloads.ts";
import { cpuSecondsOf, procAvailable, type BenchChild } from "./processes.ts";
import { loadLine, ms, setupLines, signed, us, verdict, type RunSetup } from "./report.ts";

/** Signed whole microseconds. */
const signedUs = (x: number): string => `${x >= 0 ? "+" : "−"}${Math.round(Math.abs(x))}`;
import type { GatewayBenchOptions } from "./run.ts";
import { configureGateway, gatewayCapacity, providerApiKey } from "./setup.ts";

/** Translation may cost at most this much CPU per call over pass-through, µs. */
export const translationTargetUs = 50;

type Mode = "non-streamed" | "streamed";
type VariantName = "bare proxy" | "responses pass-through" | "chat pass-through" | "messages → responses";

interface Variant {
  name: VariantName;
  /** What the call is, for the report. */
  what: string;
  target: Target;
  middle: BenchChild;
  pool: Pool;
  body: Record<Mode, Buffer>;
  /** Bytes of the answer the client must receive, per mode (probed for the translated variant). */
  bytes: Record<Mode, number>;
}

interface Cell {
  variant: VariantName;
  mode: Mode;
  requests: number;
  seconds: number;
  perSecond: number;
  latency: LatencyStats;
  firstByte: LatencyStats | undefined;
  /** CPU seconds of the process under test (bare proxy or gateway). */
  middleCpu: number;
}

interface CpuCase {
  name: string;
  /** µs per call: mean over all rounds, and the lowest and highest round. */
  mean: number;
  low: number;
  high: number;
}

interface TranslationBenchResult extends RunSetup {
  logLevel: string;
  plan: string;
  payloads: string[];
  concurrency: number;
  cells: Cell[];
  cpu: { iterations: number; warmup: number; rounds: number; cases: CpuCase[] };
  load: { phase: string; seconds: number; otherCores: number }[];
  wallSeconds: number;
}

const defaultMaxTokens = 4096;
const now = (): number => Math.floor(Date.now() / 1000);

/** The four calls of the in-process measurement, each one call's worth of the gateway's body work. */
function cpuCalls(): Record<string, () => unknown> {
  const responsesReq = requestBody(benchModel, false);
  const responsesStreamReq = requestBody(benchModel, true);
  const messagesReq = messagesRequestBody(benchModel, false);
  const messagesStreamReq = messagesRequestBody(benchModel, true);
  const answer = completeAnswer(benchModel);
  const chunks = streamAnswer(benchModel);
  const parse = (raw: Buffer): Record<string, unknown> => JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
  const { messages, responses } = formats;

  const calls = {
    "non-streamed, pass-through (responses)": () => {
      parse(responsesReq);
      return usageOfAnswer(parseAnswer(answer));
    },
    "non-streamed, translated (messages → responses)": () => {
      const body = parse(messagesReq);
      const upstream = translateRequest(body, "messages", "responses", benchModel, defaultMaxTokens);
      const parsed = parseAnswer(answer);
      const canonical = responses.readAnswer(parsed, now());
      return [upstream.body, Buffer.from(JSON.stringify(messages.writeAnswer(canonical)))];
    },
    "streamed, pass-through (responses)": () => {
      const raw = responsesStreamReq;
      parse(raw);
      const meter = new StreamMeter(raw.length);
      const splitter = new SseSplitter();
      let out = 0;
      for (const chunk of chunks) {
        for (const event of splitter.push(chunk)) {
          meter.observe(event);
          out += event.raw.length;
        }
      }
      splitter.end();
      return [out, meter.usage];
    },
    "streamed, translated (messages → responses)": () => {
      const raw = messagesStreamReq;
      const body = parse(raw);
      const upstream = translateRequest(body, "messages", "responses", benchModel, defaultMaxTokens);
      const meter = new StreamMeter(raw.length);
      const splitter = new SseSplitter();
      const reader = responses.streamReader(now());
      const writer = messages.streamWriter({ streamUsage: upstream.streamUsage });
      let out = "";
      for (const chunk of chunks) {
        for (const event of splitter.push(chunk)) {
          for (const canonical of reader.read(event)) {
            meter.observeCanonical(canonical);
            out += writer.write(canonical);
          }
        }
      }
      splitter.end();
      for (const canonical of reader.end()) {
        meter.observeCanonical(canonical);
        out += writer.write(canonical);
      }
      return [upstream.body, out, meter.usage];
    },
  };
  // A wrong translation fails the bench instead of flattering it.
  const [, plain] = calls["non-streamed, translated (messages → responses)"]() as [Buffer, Buffer];
  const translatedAnswer = JSON.parse(plain.toString("utf8")) as { type?: unknown; content?: { text?: unknown }[] };
  if (translatedAnswer.type !== "message" || translatedAnswer.content?.[0]?.text !== "Hello! How can I help you today?") {
    throw new Error(`the translated answer is not the expected message: ${plain.toString("utf8").slice(0, 300)}`);
  }
  const [, streamed] = calls["streamed, translated (messages → responses)"]() as [Buffer, string];
  if (!streamed.includes("event: message_stop") || !streamed.includes("event: content_block_delta")) {
    throw new Error(`the translated stream is not a messages stream: ${streamed.slice(0, 300)}`);
  }
  return calls;
}

/** Each case run `iterations` times after `warmup`, in `rounds` that rotate the order; µs per call. */
function measureCpu(iterations: number, warmup: number, rounds: number): CpuCase[] {
  const calls = Object.entries(cpuCalls());
  let sink: unknown;
  for (const [, fn] of calls) for (let i = 0; i < warmup; i++) sink = fn();
  const perRound = new Map<string, number[]>(calls.map(([name]) => [name, []]));
  const parts = shares(iterations, rounds);
  for (let round = 0; round < rounds; round++) {
    for (const [name, fn] of rotation(calls, round)) {
      const n = parts[round]!;
      const start = performance.now();
      for (let i = 0; i < n; i++) sink = fn();
      perRound.get(name)!.push(((performance.now() - start) * 1000) / n);
    }
  }
  if (sink === undefined) throw new Error("unreachable");
  return calls.map(([name]) => {
    const values = perRound.get(name)!;
    return {
      name,
      mean: values.reduce((sum, x) => sum + x, 0) / values.length,
      low: Math.min(...values),
      high: Math.max(...values),
    };
  });
}

/** One call of `v`, read to the end; the bytes of the answer (to learn what a translated answer weighs). */
async function probe(v: Pick<Variant, "pool" | "target" | "name">, body: Buffer, mustHold: string): Promise<number> {
  const res = await v.pool.request({ method: "POST", path: v.target.path!, headers: v.target.headers, body });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${v.name}: status ${res.statusCode}: ${text.slice(0, 500)}`);
  if (!text.includes(mustHold)) throw new Error(`${v.name}: the answer lacks ${JSON.stringify(mustHold)}: ${text.slice(0, 500)}`);
  return Buffer.byteLength(text);
}

export async function runGatewayTranslationBench(options: GatewayBenchOptions): Promise<string> {
  if (!procAvailable()) throw new Error("the translation bench reads CPU time from /proc: it runs on Linux only");
  const { log } = options;
  const count = (n: number): number => Math.max(1, Math.round(n * options.scale));
  const plan = {
    concurrency: 64,
    warmup: count(2000),
    calls: count(12_000),
    streams: count(4000),
    rounds: 4,
    cpuIterations: count(40_000),
    cpuWarmup: count(10_000),
    cpuRounds: 8,
  };

  const started = performance.now();
  const date = new Date();
  log(`gateway translation: CPU in process, ${plan.cpuIterations} calls per case after ${plan.cpuWarmup} of warm-up, ${plan.cpuRounds} rounds`);
  const cpuCases = measureCpu(plan.cpuIterations, plan.cpuWarmup, plan.cpuRounds);

  return withHarness(log, async (h) => {
    const { admin, cores, guarded } = h;
    log("gateway translation: starting the fake provider");
    const { url: providerUrl } = await h.startProvider();
    log("gateway translation: configuring the gateway");
    const configuration = await configureGateway(admin, providerUrl);
    log("gateway translation: starting the bare proxy and the gateway");
    const proxy = h.start("bare proxy", ["--expose-gc", ...h.nodeFlags, here("bare-proxy.ts")], cores?.middle, {
      ...process.env,
      BENCH_UPSTREAM: providerUrl,
      BENCH_CONNECTIONS: String(gatewayCapacity),
    });
    const gateway = await h.startGateway("gateway");
    const proxyUrl = `http://127.0.0.1:${(await guarded(proxy.next("ready"))).port}`;

    const json = { "content-type": "application/json" };
    const gatewayHeaders = { ...json, authorization: `Bearer ${configuration.key.secret}` };
    const responsesBytes = { "non-streamed": completeAnswer(benchModel).length, streamed: byteLength(streamAnswer(benchModel)) };
    const specs: Omit<Variant, "pool">[] = [
      {
        name: "bare proxy",
        what: "POST /v1/responses through the bare undici proxy",
        middle: proxy,
        target: { name: "bare proxy", origin: proxyUrl, path: "/v1/responses", headers: { ...json, authorization: `Bearer ${providerApiKey}` } },
        body: { "non-streamed": requestBody(benchModel, false), streamed: requestBody(benchModel, true) },
        bytes: responsesBytes,
      },
      {
        name: "responses pass-through",
        what: "POST /v1/responses through the gateway, to the provider's /v1/responses as it came",
        middle: gateway.child,
        target: { name: "responses pass-through", origin: gateway.url, path: "/v1/responses", headers: gatewayHeaders },
        body: { "non-streamed": requestBody(benchModel, false), streamed: requestBody(benchModel, true) },
        bytes: responsesBytes,
      },
      {
        name: "chat pass-through",
        what: "POST /v1/chat/completions through the gateway, to the provider's /v1/chat/completions as it came",
        middle: gateway.child,
        target: { name: "chat pass-through", origin: gateway.url, path: "/v1/chat/completions", headers: gatewayHeaders },
        body: { "non-streamed": chatRequestBody(benchModel, false), streamed: chatRequestBody(benchModel, true) },
        bytes: { "non-streamed": chatCompleteAnswer(benchModel).length, streamed: byteLength(chatStreamAnswer(benchModel, true)) },
      },
      {
        name: "messages → responses",
        what: "POST /v1/messages (Anthropic client) through the gateway, translated to the provider's /v1/responses and back",
        middle: gateway.child,
        target: { name: "messages → responses", origin: gateway.url, path: "/v1/messages", headers: { ...gatewayHeaders, "anthropic-version": "2023-06-01" } },
        body: { "non-streamed": messagesRequestBody(benchModel, false), streamed: messagesRequestBody(benchModel, true) },
        bytes: { "non-streamed": Number.NaN, streamed: Number.NaN },
      },
    ];
    const variants: Variant[] = specs.map((v) => ({ ...v, pool: new Pool(v.target.origin, { connections: plan.concurrency }) }));
    h.defer(() => Promise.all(variants.map((v) => v.pool.destroy())));

    log("gateway translation: waiting for the gateway to answer, and probing each call");
    await guarded(waitUntilServed("the gateway", () => callOnce(variants[1]!.pool, variants[1]!.target, variants[1]!.body["non-streamed"], responsesBytes["non-streamed"])));
    const translated = variants[3]!;
    translated.bytes["non-streamed"] = await guarded(probe(translated, translated.body["non-streamed"], '"type":"message"'));
    translated.bytes.streamed = await guarded(probe(translated, translated.body.streamed, "event: message_stop"));
    const chat = variants[2]!;
    await guarded(probe(chat, chat.body["non-streamed"], '"object":"chat.completion"'));
    await guarded(probe(chat, chat.body.streamed, "data: [DONE]"));
    if (cores) {
      h.pinGenerator();
      log(`gateway translation: pinned: load generator and provider on core ${cores.generator}, proxy and gateway on core ${cores.middle}`);
    }

    const result = await guarded(
      (async (): Promise<TranslationBenchResult> => {
        const send = (v: Variant, mode: Mode, latency?: number[], firstByte?: number[]) =>
          mode === "non-streamed"
            ? async () => {
                const start = performance.now();
                await callOnce(v.pool, v.target, v.body[mode], v.bytes[mode]);
                latency?.push(performance.now() - start);
              }
            : async () => {
                const timing = await streamOnce(v.pool, v.target, v.body[mode], v.bytes[mode]);
                latency?.push(timing.total);
                firstByte?.push(timing.firstByte);
              };
        log(`gateway translation: warm-up, ${plan.warmup} calls per variant and mode at c=${plan.concurrency}`);
        await h.phase("warm-up", async () => {
          for (const mode of ["non-streamed", "streamed"] as const) for (const v of variants) await closedLoop(plan.warmup, plan.concurrency, send(v, mode));
        });
        const cells: Cell[] = [];
        for (const mode of ["non-streamed", "streamed"] as const) {
          const total = mode === "non-streamed" ? plan.calls : plan.streams;
          log(`gateway translation: ${mode}: ${total} calls per variant at c=${plan.concurrency}, ${plan.rounds} rounds`);
          const acc = new Map(variants.map((v) => [v.name, { requests: 0, seconds: 0, latency: [] as number[], firstByte: [] as number[], cpu: 0 }]));
          const parts = shares(total, plan.rounds);
          await h.phase(mode, async () => {
            for (let round = 0; round < plan.rounds; round++) {
              for (const v of rotation(variants, round)) {
                const a = acc.get(v.name)!;
                const before = cpuSecondsOf(v.middle.pid);
                a.seconds += (await closedLoop(parts[round]!, plan.concurrency, send(v, mode, a.latency, a.firstByte))) / 1000;
                a.cpu += cpuSecondsOf(v.middle.pid) - before;
                a.requests += parts[round]!;
              }
            }
          });
          for (const v of variants) {
            const a = acc.get(v.name)!;
            cells.push({
              variant: v.name,
              mode,
              requests: a.requests,
              seconds: a.seconds,
              perSecond: a.requests / a.seconds,
              latency: latencyStats(a.latency),
              firstByte: mode === "streamed" ? latencyStats(a.firstByte) : undefined,
              middleCpu: a.cpu,
            });
          }
        }
        const bytes = (v: Variant): string => `${v.body["non-streamed"].length} B → ${v.bytes["non-streamed"]} B; streamed ${v.body.streamed.length} B → ${v.bytes.streamed} B`;
        return {
          date,
          machine: machine(),
          database: h.database,
          source: sourceRevision(),
          nodeFlags: h.nodeFlags.join(" "),
          logLevel: h.logLevel,
          placement: cores
            ? `load generator (this process, with the idle management API) and fake provider pinned to core ${cores.generator}; the bare proxy and the gateway pinned to core ${cores.middle} (one carries traffic at a time); PostgreSQL unpinned`
            : "no pinning (taskset or a second core is missing): every process floats over all cores",
          plan:
            `per variant and mode, ${plan.warmup} warm-up calls, then ${plan.calls} non-streamed and ${plan.streams} streamed calls at c=${plan.concurrency}, ` +
            `in ${plan.rounds} rounds that rotate the variants; the three gateway variants through one gateway process`,
          payloads: variants.map((v) => `${v.name} (${v.what}): ${bytes(v)}`),
          concurrency: plan.concurrency,
          cells,
          cpu: { iterations: plan.cpuIterations, warmup: plan.cpuWarmup, rounds: plan.cpuRounds, cases: cpuCases },
          load: h.load,
          wallSeconds: (performance.now() - started) / 1000,
        };
      })(),
    );
    log("gateway translation: stopping the children and removing the database");
    return translationMarkdown(result);
  });
}

function translationMarkdown(r: TranslationBenchResult): string {
  const lines: string[] = [];
  lines.push("# Warden benchmark: the cost of translating between client formats and provider kinds", "");
  lines.push(...setupLines(r, "the bare proxy and the gateway"));
  lines.push(`- Plan: ${r.plan}; log level ${r.logLevel}`);
  lines.push(`- Calls and sizes (request → answer): ${r.payloads.join("; ")}`);
  lines.push(loadLine(r.load));
  lines.push(`- Wall time of this section: ${r.wallSeconds.toFixed(1)} s`, "");

  lines.push("## CPU of the gateway's body work per call, in process, µs", "");
  lines.push(
    `${r.cpu.iterations.toLocaleString("en")} calls per case after ${r.cpu.warmup.toLocaleString("en")} of warm-up, in ${r.cpu.rounds} rounds that rotate the cases; ` +
      "mean per call (lowest and highest round). Pass-through: the request parsed, the answer parsed for its usage, or the stream split and metered. " +
      "Translated: the same parse, translateRequest (messages → responses), then readAnswer + writeAnswer + JSON text, or per event reader.read + meter + writer.write.",
    "",
    "| Call | µs per call | lowest round | highest round |",
    "|---|--:|--:|--:|",
  );
  for (const c of r.cpu.cases) lines.push(`| ${c.name} | ${c.mean.toFixed(1)} | ${c.low.toFixed(1)} | ${c.high.toFixed(1)} |`);
  const cpu = (name: string): number => r.cpu.cases.find((c) => c.name.startsWith(name))?.mean ?? Number.NaN;
  const plainDiff = cpu("non-streamed, translated") - cpu("non-streamed, pass-through");
  const streamDiff = cpu("streamed, translated") - cpu("streamed, pass-through");
  lines.push(
    "",
    `- Translation over pass-through, per call: non-streamed **${plainDiff.toFixed(1)} µs**, streamed (20 provider events) **${streamDiff.toFixed(1)} µs** ` +
      `(goal ≤ ${translationTargetUs} µs: ${verdict(plainDiff <= translationTargetUs)} / ${verdict(streamDiff <= translationTargetUs)}).`,
    "",
  );

  lines.push(`## End to end at c=${r.concurrency}`, "");
  lines.push(
    "Latency in ms, from the send to the last byte (streams: also to the first byte). CPU: the process under test (the bare proxy or the gateway), per call.",
    "",
    "| Requests | Variant | req/s | vs bare proxy | vs responses pass-through | p50 | p90 | p99 | first byte p50 | first byte p99 | µs CPU per call | CPU over responses pass-through |",
    "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  );
  const notes: string[] = [];
  for (const mode of ["non-streamed", "streamed"] as const) {
    const rows = r.cells.filter((c) => c.mode === mode);
    const proxy = rows.find((c) => c.variant === "bare proxy");
    const pass = rows.find((c) => c.variant === "responses pass-through");
    if (!proxy || !pass) continue;
    const cpuPerCall = (c: Cell): number => (c.middleCpu * 1e6) / c.requests;
    for (const c of rows) {
      lines.push(
        `| ${mode} | ${c.variant} | ${Math.round(c.perSecond)} | ${(c.perSecond / proxy.perSecond).toFixed(2)}× | ${(c.perSecond / pass.perSecond).toFixed(2)}× | ` +
          `${ms(c.latency.p50)} | ${ms(c.latency.p90)} | ${ms(c.latency.p99)} | ${c.firstByte ? ms(c.firstByte.p50) : "—"} | ${c.firstByte ? ms(c.firstByte.p99) : "—"} | ` +
          `${us(c.middleCpu, c.requests)} | ${c.variant === "bare proxy" ? "—" : signedUs(cpuPerCall(c) - cpuPerCall(pass))} |`,
      );
    }
    const translated = rows.find((c) => c.variant === "messages → responses");
    if (translated) {
      notes.push(
        `- ${mode}: the translated call costs the gateway ${signedUs(cpuPerCall(translated) - cpuPerCall(pass))} µs of CPU per call over responses pass-through, ` +
          `end to end (${((translated.perSecond / pass.perSecond - 1) * 100).toFixed(1)}% throughput, p99 ${signed(translated.latency.p99 - pass.latency.p99)} ms).`,
      );
    }
  }
  lines.push("", ...notes);
  return lines.join("\n") + "\n";
}
