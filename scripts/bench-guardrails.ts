/**
 * In-process cost of the guardrail detectors per request, for 1 KB and 10 KB prompts:
 *
 *   node scripts/bench-guardrails.ts
 *
 * The prompts are ordinary English text with a few numbers, an e-mail address and an IP address
 * mixed in (so that the PII validators run), built deterministically. Each size runs a warm-up,
 * then a fixed number of requests; each request runs PII, prompt injection and content safety
 * on the same text, as a gateway input check with all three guardrails on would. Prints the
 * median, p99 and mean per request, for all three together and for each detector.
 */
import { loadContentSafety } from "../src/gateway/guardrails/detectors/content-safety.ts";
import { loadInjection } from "../src/gateway/guardrails/detectors/injection.ts";
import { loadPii } from "../src/gateway/guardrails/detectors/pii.ts";

const SENTENCES = [
  "Could you help me plan a three-day trip to Lisbon in early May with a budget of about 900 euros?",
  "I would like to know which neighbourhoods are good for walking and where to find the best pastries.",
  "My colleague said the tram 28 gets crowded, so maybe we should take it early in the morning.",
  "Please also summarise the museum opening hours and whether I need to book tickets in advance.",
  "Send the itinerary to maria.lopez@example.org when it is ready, and keep it under two pages.",
  "Our office VPN gateway is 192.0.2.41 in case the booking site blocks my work laptop.",
  "The order number for the flights is 302-7781934-5521106 and the booking was made on 2024-04-12.",
  "Ignore the museum on Monday because most of them are closed, and suggest a day trip to Sintra instead.",
  "I am vegetarian, so list restaurants that have good options and are not too expensive.",
  "Finally, write a short packing list for warm days and cool evenings by the river.",
];

function prompt(bytes: number, seed: number): string {
  let out = "";
  let i = seed;
  while (out.length < bytes) {
    out += (SENTENCES[i % SENTENCES.length] ?? "") + " ";
    i += 3;
  }
  return out.slice(0, bytes);
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

const pii = await loadPii();
const injection = await loadInjection();
const content = await loadContentSafety();

const detectors: [string, (text: string) => unknown][] = [
  ["pii", (t) => pii.detect(t)],
  ["injection", (t) => injection.score(t)],
  ["content", (t) => content.score(t)],
];

const REQUESTS = 2000;
const lines: string[] = ["| prompt | detectors | median | p99 | mean |", "| --- | --- | --- | --- | --- |"];
for (const size of [1024, 10 * 1024]) {
  const texts = Array.from({ length: 50 }, (_, i) => prompt(size, i));
  const requests = size > 4096 ? REQUESTS / 4 : REQUESTS;
  for (const [name, run] of [["all three", (t: string) => detectors.forEach(([, d]) => d(t))] as const, ...detectors]) {
    for (let i = 0; i < 200; i++) run(texts[i % texts.length] ?? "");
    const times: number[] = [];
    for (let i = 0; i < requests; i++) {
      const text = texts[i % texts.length] ?? "";
      const start = performance.now();
      run(text);
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    const ms = (x: number): string => `${x.toFixed(3)} ms`;
    lines.push(`| ${size / 1024} KB | ${name} | ${ms(quantile(times, 0.5))} | ${ms(quantile(times, 0.99))} | ${ms(mean)} |`);
  }
}
console.log(`Node ${process.version}, ${REQUESTS} requests at 1 KB and ${REQUESTS / 4} at 10 KB after a warm-up.\n`);
console.log(lines.join("\n"));
