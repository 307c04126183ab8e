import type { StreamText } from "../formats/stream-text.ts";
import type { StreamGuard } from "../guardrails/stream-guard.ts";

/** An item waiting for the guardrails, and where its text sits in each channel. */
interface Held<T> {
  item: T;
  pieces: { channel: string; text: string; start: number; end: number }[];
}

/**
 * A stream's items held back until the output guardrails have read far enough past their text
 * (stream-guard.ts), then let go in order, each whole: an item without text waits for those
 * before it. Text the guardrails redacted goes out rewritten, and so do the snapshot events that
 * repeat it; every other item goes out as it came. A block throws out of the iteration, and
 * what was held is dropped.
 */
export async function* guardedStream<T>(items: AsyncIterable<T>, text: StreamText<T>, guard: StreamGuard): AsyncGenerator<T> {
  const held: Held<T>[] = [];
  const lengths = new Map<string, number>();
  for await (const item of items) {
    const pieces = text.pieces(item).map(({ channel, text }) => {
      const start = lengths.get(channel) ?? 0;
      lengths.set(channel, start + text.length);
      return { channel, text, start, end: start + text.length };
    });
    held.push({ item, pieces });
    for (const piece of pieces) {
      // Most pieces start no read: no promise to wait for.
      const reading = guard.append(piece.channel, piece.text);
      if (reading) await reading;
    }
    for (const channel of text.ends(item)) await guard.close(channel);
    while (held.length > 0 && releasable(held[0]!, guard)) yield outgoing(held.shift()!, text, guard);
  }
  await guard.closeAll();
  while (held.length > 0) yield outgoing(held.shift()!, text, guard);
}

function releasable<T>(held: Held<T>, guard: StreamGuard): boolean {
  for (const piece of held.pieces) if (guard.releasable(piece.channel) < piece.end) return false;
  return true;
}

/** An item as it goes out: its text as the guardrails left it, or a snapshot redacted. */
function outgoing<T>({ item, pieces }: Held<T>, text: StreamText<T>, guard: StreamGuard): T {
  if (pieces.length === 0) return (guard.redacts && text.snapshot(item, (whole) => guard.redactWhole(whole))) || item;
  if (pieces.length === 1) {
    const piece = pieces[0]!;
    const taken = guard.take(piece.channel, piece.start, piece.end);
    return taken === piece.text ? item : text.withTexts(item, [taken]);
  }
  const texts = pieces.map((piece) => guard.take(piece.channel, piece.start, piece.end));
  return texts.every((t, i) => t === pieces[i]!.text) ? item : text.withTexts(item, texts);
}
