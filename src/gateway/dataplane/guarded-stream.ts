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
    for (const piece of pieces) await guard.append(piece.channel, piece.text);
    for (const channel of text.ends(item)) await guard.close(channel);
    yield* released(held, text, guard);
  }
  await guard.closeAll();
  yield* released(held, text, guard);
}

/** The held items, from the first, that may go now. */
function* released<T>(held: Held<T>[], text: StreamText<T>, guard: StreamGuard): Generator<T> {
  while (held.length > 0 && held[0]!.pieces.every((piece) => guard.releasable(piece.channel) >= piece.end)) {
    const { item, pieces } = held.shift()!;
    if (pieces.length > 0) {
      const texts = pieces.map((piece) => guard.take(piece.channel, piece.start, piece.end));
      yield texts.every((t, i) => t === pieces[i]!.text) ? item : text.withTexts(item, texts);
    } else {
      yield (guard.redacts && text.snapshot(item, (whole) => guard.redactWhole(whole))) || item;
    }
  }
}
