/**
 * In-process cost of the guardrail detectors per request:
 *
 *   node scripts/bench-guardrails.ts
 *
 * - the evaluation texts (every development row) joined and cut into 1 KB requests, 3,000 of them
 *   spread over the whole corpus: the figure the cost target is stated for;
 * - each development row as a request of its own, as milliseconds per KB of its text (short rows
 *   weigh their fixed cost more);
 * - ordinary English prompts of 1 KB and 10 KB with an e-mail, an IP and an order number mixed in
 *   (the synthetic prompt of earlier measurements).
 * Each prints the median, p99, mean and maximum elapsed time, and the median and p99 of the CPU time
 * (which a machine shared with other work inflates less), for all three detectors and for each.
 */
import { checks, chunks, evaluationTexts, machine, ms, time } from "./guardrail-cost.ts";

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

const all = await checks();
const texts = evaluationTexts();
const sets: [string, string[], boolean][] = [
  ["evaluation texts, 1 KB requests", chunks(texts, 1024, 3000), false],
  ["evaluation rows, per KB", texts, true],
  ["synthetic prompt, 1 KB", Array.from({ length: 2000 }, (_, i) => prompt(1024, i % 50)), false],
  ["synthetic prompt, 10 KB", Array.from({ length: 500 }, (_, i) => prompt(10 * 1024, i % 50)), false],
];
const lines = [
  "| requests | detectors | median | p99 | mean | max | CPU median | CPU p99 |",
  "| --- | --- | --- | --- | --- | --- | --- | --- |",
];
for (const [name, set, perKb] of sets) {
  for (const [detector, run] of all) {
    const { wall, cpu } = time(run, set, perKb);
    lines.push(`| ${name} (${set.length}) | ${detector} | ${ms(wall.p50)} | ${ms(wall.p99)} | ${ms(wall.mean)} | ${ms(wall.max)} | ${ms(cpu.p50)} | ${ms(cpu.p99)} |`);
  }
}
console.log(`${machine()}\n`);
console.log(lines.join("\n"));
