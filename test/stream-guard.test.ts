import { describe, expect, it } from "vitest";
import { GatewayError } from "../src/gateway/dataplane/errors.ts";
import { guardedStream } from "../src/gateway/dataplane/guarded-stream.ts";
import { canonicalStreamText } from "../src/gateway/formats/stream-text.ts";
import type { StreamEvent } from "../src/gateway/formats/canonical.ts";
import { createPiiDetector } from "../src/gateway/guardrails/detectors/pii.ts";
import { StreamGuard } from "../src/gateway/guardrails/stream-guard.ts";
import { guardrailConfig } from "./support/guardrail-config.ts";

const pii = createPiiDetector();

/** A guard with a PII guardrail (redacting or not) and a stand-in for any other guardrail that records what it read. */
function guardOf(options: { redact?: boolean; types?: string[]; window?: number; blockWord?: string } = {}) {
  const read: string[] = [];
  const guard = new StreamGuard({
    guardrails: [guardrailConfig("pii", { stage: "output", redact: options.redact ?? false, piiEntityTypes: options.types ?? [] }), guardrailConfig("content_safety", { stage: "output" })],
    windowChars: options.window ?? 16,
    pii: () => pii,
    check: async (_guardrail, text) => {
      read.push(text);
      if (options.blockWord && text.includes(options.blockWord)) throw new GatewayError(422, "blocked word");
      return "pass";
    },
  });
  return { guard, read };
}

const deltas = (texts: string[]): StreamEvent[] => [
  { type: "block_start", index: 0, block: { type: "text" } },
  ...texts.map((text): StreamEvent => ({ type: "text_delta", index: 0, text })),
  { type: "block_stop", index: 0 },
];

async function* from<T>(items: T[], seen?: T[]): AsyncGenerator<T> {
  for (const item of items) {
    seen?.push(item);
    yield item;
  }
}

describe("the hold-back window", () => {
  it("lets a piece go once the text is read a window past it; a block's end lets the rest go", async () => {
    // Window 16. Pieces of 10 characters, each ending in a space, so every piece ends a word.
    const pieces = ["aaaa bbbb ", "cccc dddd ", "eeee ffff ", "gggg hhhh "];
    const upstream: StreamEvent[] = [];
    const out: { event: StreamEvent; upstreamSeen: number }[] = [];
    const { guard } = guardOf();
    for await (const event of guardedStream(from(deltas(pieces), upstream), canonicalStreamText, guard)) out.push({ event, upstreamSeen: upstream.length });
    // block_start goes at once. Piece 1 (0–10) needs the text read to 26: after piece 3 (30).
    // Piece 2 (10–20) needs 36: after piece 4 (40). Pieces 3 and 4 wait for the block's end.
    expect(out.map(({ event, upstreamSeen }) => [event.type === "text_delta" ? event.text : event.type, upstreamSeen])).toEqual([
      ["block_start", 1],
      ["aaaa bbbb ", 4],
      ["cccc dddd ", 5],
      ["eeee ffff ", 6],
      ["gggg hhhh ", 6],
      ["block_stop", 6],
    ]);
  });

  it("a block ends the iteration: what was held is never handed out", async () => {
    const { guard } = guardOf({ blockWord: "secret" });
    const out: string[] = [];
    const run = async () => {
      for await (const event of guardedStream(from(deltas(["one two three ", "four five six ", "seven sec", "ret eight "])), canonicalStreamText, guard)) {
        if (event.type === "text_delta") out.push(event.text);
      }
    };
    await expect(run()).rejects.toThrow("blocked word");
    // "secret" is split across the third and fourth pieces; only the first piece had gone.
    expect(out).toEqual(["one two three "]);
  });

  it("redacts an entity split across pieces: the placeholder where it starts, nothing where it goes on", async () => {
    const { guard } = guardOf({ redact: true, window: 32 });
    const texts = ["Pay with card number 4111 11", "11 1111 1111 today, ", "then stop. ", "Thanks."];
    const out: string[] = [];
    for await (const event of guardedStream(from(deltas(texts)), canonicalStreamText, guard)) if (event.type === "text_delta") out.push(event.text);
    expect(out).toEqual(["Pay with card number [CREDIT_CARD]", " today, ", "then stop. ", "Thanks."]);
    expect(guard.counts).toEqual({ CREDIT_CARD: 1 });
    expect(guard.verdict()).toBe("pii:redacted,content_safety:pass");
  });

  it("does not read a word still being written: an address cut between pieces is redacted whole", async () => {
    const { guard } = guardOf({ redact: true, types: ["EMAIL_ADDRESS"] });
    const out: string[] = [];
    for await (const event of guardedStream(from(deltas(["Please write to jane@exa", "mple.org today and ", "thanks a lot."])), canonicalStreamText, guard)) {
      if (event.type === "text_delta") out.push(event.text);
    }
    expect(out).toEqual(["Please write to [EMAIL_ADDRESS]", " today and ", "thanks a lot."]);
    expect(guard.counts).toEqual({ EMAIL_ADDRESS: 1 });
  });

  it("keeps channels apart, and reads each only as far as it has to: a long stream costs a bounded multiple of its text", async () => {
    const { guard, read } = guardOf({ window: 64 });
    const words = Array.from({ length: 20_000 }, (_, i) => `word${i % 97} `);
    const events: StreamEvent[] = [
      { type: "block_start", index: 0, block: { type: "text" } },
      ...words.map((text): StreamEvent => ({ type: "text_delta", index: 0, text })),
      { type: "block_stop", index: 0 },
      { type: "block_start", index: 1, block: { type: "text" } },
      { type: "text_delta", index: 1, text: "second block" },
      { type: "block_stop", index: 1 },
    ];
    let text = "";
    for await (const event of guardedStream(from(events), canonicalStreamText, guard)) if (event.type === "text_delta") text += event.text;
    const total = words.join("").length;
    expect(text).toBe(`${words.join("")}second block`);
    // A window of 64 is read per 16 new characters (or the next word past them, of about 7): some
    // 64 + 23 + 7 characters per 16 to 23 new, so at most six times the text.
    const charsRead = read.reduce((sum, window) => sum + window.length, 0);
    expect(charsRead).toBeLessThanOrEqual(total * 6);
    expect(read.at(-1)).toBe("second block");
  });
});
