import type { GuardrailConfig } from "../config/types.ts";
import { guardrailBlocked, piiReason } from "../dataplane/errors.ts";
import type { PiiDetector, PiiEntityType } from "./detectors/pii.ts";
import { placeholderOf, redactedTypes, redactor, type EntityCounts } from "./redaction.ts";

/**
 * Output guardrails on a streamed answer, with a bounded hold-back window.
 *
 * The answer's text comes in pieces, per channel (a content block, or a choice). The text of a
 * channel is checked in overlapping windows as it grows, and a piece may go to the caller once
 * the guardrails have read `windowChars` characters past it, or its channel has ended. So an
 * entity or a phrase up to the window's length that spans pieces is seen whole before any of it
 * is released, and the caller waits for at most the window's worth of text more than without
 * guardrails.
 *
 * A window starts `windowChars` before the end of the previous one (moved back to the start of
 * its word), and ends at the last whitespace: a word still being written is not read until it
 * is whole (a channel's end reads everything). A PII entity counts only when at least
 * {@link SETTLED_CHARS} characters follow it in the window, for an entity with spaces in it (a
 * card number in groups, a phone number) may still be growing; so the entities always caught
 * whole are those up to `windowChars - SETTLED_CHARS` long.
 *
 * The first window is read as soon as there is more than a window of text, so the first token
 * waits for exactly a window more; after it, a window is read once a quarter of a window of new
 * text has come, so later pieces wait up to 1.25 windows, and the guardrails read each character
 * about six times (a window per quarter window), not once per provider event (a few characters
 * each). Work stays linear in the text.
 *
 * A block throws the guardrail's 422 error; a redacting PII guardrail replaces what it finds
 * with placeholders in the text it hands out.
 */

/** Characters that must follow a PII finding inside the window before it is taken as whole. */
export const SETTLED_CHARS = 8;

export interface StreamGuardOptions {
  /** The output stage's guardrails, in their order. */
  guardrails: readonly GuardrailConfig[];
  windowChars: number;
  /** The built-in PII detector, for guardrails that redact or block on PII. */
  pii: () => PiiDetector;
  /**
   * Any other guardrail's check of a text, fail modes included (guardrails.ts): throws its block,
   * or says whether it passed or could not check and let the text through.
   */
  check: (guardrail: GuardrailConfig, text: string) => Promise<"pass" | "error-open">;
}

interface Span {
  start: number;
  end: number;
  type: string;
}

class Channel {
  /** Absolute offset of `text[0]`: text already released and read is dropped. */
  base = 0;
  text = "";
  length = 0;
  /** Where the text may be cut for a window: just after its last whitespace. */
  boundary = 0;
  /** The end of the last window read. */
  checked = 0;
  released = 0;
  closed = false;
  /** Redacted entities not yet wholly released, in order. */
  spans: Span[] = [];
}

/** Space, tab, line breaks, and the other Unicode spaces a model writes (no-break, ideographic). */
function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13) || code === 0xa0 || code === 0x3000 || (code >= 0x2000 && code <= 0x200a) || code === 0x2028 || code === 0x2029;
}

export class StreamGuard {
  readonly #options: StreamGuardOptions;
  readonly #channels = new Map<string, Channel>();
  readonly #redacting: GuardrailConfig | undefined;
  /** Guardrails that could not check some window, and let it through. */
  readonly #opened = new Set<GuardrailConfig>();
  /** What the redacting guardrail replaced, by type. */
  readonly counts: EntityCounts = {};

  constructor(options: StreamGuardOptions) {
    this.#options = options;
    this.#redacting = options.guardrails.find((g) => g.kind === "pii" && g.redact);
  }

  /** Whether text is rewritten (a stream's snapshot events must then be rewritten too). */
  get redacts(): boolean {
    return this.#redacting !== undefined;
  }

  /** The redaction of a whole text, for snapshot events that repeat a channel's text (not counted again). */
  redactWhole(text: string): string {
    const guardrail = this.#redacting;
    return guardrail ? redactor(this.#options.pii(), guardrail.piiEntityTypes, {})(text) : text;
  }

  /** For the request log: `pii:redacted` when the redacting guardrail replaced something, else each guardrail passed. */
  verdict(): string {
    return this.#options.guardrails
      .map((g) => {
        if (this.#opened.has(g)) return `${g.kind}:error-open`;
        return g === this.#redacting && Object.keys(this.counts).length > 0 ? "pii:redacted" : `${g.kind}:pass`;
      })
      .join(",");
  }

  /**
   * More text of a channel. Usually nothing is read (undefined, no promise made); when a window
   * is due, the promise of its read, which rejects with the 422 of a guardrail that blocks it.
   */
  append(name: string, text: string): Promise<void> | undefined {
    const channel = this.#channel(name);
    channel.text += text;
    channel.length += text.length;
    for (let i = text.length - 1; i >= 0; i--) {
      if (isSpace(text.charCodeAt(i))) {
        channel.boundary = channel.length - text.length + i + 1;
        break;
      }
    }
    const window = this.#options.windowChars;
    // A word longer than the window is cut, not waited for: held text stays bounded.
    if (channel.length - channel.boundary > window) channel.boundary = channel.length;
    // Reading is only worth it when it lets text go: the first time, once past a window; then a
    // quarter window further each time.
    const next = channel.checked === 0 ? window : channel.checked + Math.max(1, Math.floor(window / 4));
    return channel.boundary >= next ? this.#read(channel, channel.boundary, false) : undefined;
  }

  /** A channel's end: the rest of its text is read, and may all go. */
  async close(name: string): Promise<void> {
    const channel = this.#channels.get(name);
    if (!channel || channel.closed) return;
    if (channel.length > channel.checked) await this.#read(channel, channel.length, true);
    channel.closed = true;
  }

  /** The answer's end: every channel closes. */
  async closeAll(): Promise<void> {
    for (const name of this.#channels.keys()) await this.close(name);
  }

  /** How far a channel's text may be released. */
  releasable(name: string): number {
    const channel = this.#channels.get(name);
    if (!channel) return 0;
    return channel.closed ? channel.length : Math.max(channel.released, channel.checked - this.#options.windowChars);
  }

  /**
   * The channel's text from `start` to `end` as the caller gets it: an entity redacted is its
   * placeholder where it starts, and nothing elsewhere. Pieces are taken in order, up to
   * `releasable`.
   */
  take(name: string, start: number, end: number): string {
    const channel = this.#channels.get(name)!;
    let out = "";
    let at = start;
    for (const span of channel.spans) {
      if (span.start >= end) break;
      if (span.end <= at) continue;
      if (span.start >= at) {
        out += channel.text.slice(at - channel.base, span.start - channel.base) + placeholderOf(span.type);
      }
      at = Math.min(span.end, end);
    }
    out += channel.text.slice(at - channel.base, end - channel.base);
    channel.released = end;
    if (channel.spans.length > 0) channel.spans = channel.spans.filter((span) => span.end > end);
    this.#trim(channel);
    return out;
  }

  #channel(name: string): Channel {
    let channel = this.#channels.get(name);
    if (!channel) this.#channels.set(name, (channel = new Channel()));
    return channel;
  }

  /** Reads the window that ends at `end`, after the last one, and runs every guardrail on it. */
  async #read(channel: Channel, end: number, closing: boolean): Promise<void> {
    const window = this.#options.windowChars;
    let start = Math.max(channel.base, channel.checked - window);
    // Back to the start of the word, for a word cut in two reads as another word.
    const floor = Math.max(channel.base, start - window);
    while (start > floor && !isSpace(channel.text.charCodeAt(start - 1 - channel.base))) start -= 1;
    const text = channel.text.slice(start - channel.base, end - channel.base);
    for (const guardrail of this.#options.guardrails) {
      if (guardrail.kind === "pii" && !guardrail.modelPath && !guardrail.classifierUrl) this.#pii(guardrail, channel, text, start, end, closing);
      else if ((await this.#options.check(guardrail, text)) === "error-open") this.#opened.add(guardrail);
    }
    channel.checked = end;
    this.#trim(channel);
  }

  /** The built-in PII detector on a window: it blocks on an entity, or records it to be redacted. */
  #pii(guardrail: GuardrailConfig, channel: Channel, text: string, offset: number, end: number, closing: boolean): void {
    const types: readonly PiiEntityType[] = redactedTypes(guardrail.piiEntityTypes);
    const settled = this.#options.pii()
      .detect(text, { entityTypes: types })
      .filter((f) => closing || offset + f.end + SETTLED_CHARS <= end);
    if (settled.length === 0) return;
    if (!guardrail.redact) throw guardrailBlocked("pii", "output", piiReason(settled.map((f) => f.entityType)));
    for (const finding of settled) {
      // Released text cannot be taken back: only an entity longer than the window reaches it.
      const span = { start: Math.max(offset + finding.start, channel.released), end: offset + finding.end, type: finding.entityType };
      if (span.start >= span.end) continue;
      // An entity read in an earlier window, again (or a piece of it, where this window starts).
      if (channel.spans.some((s) => s.start < span.end && span.start < s.end)) continue;
      channel.spans.push(span);
      this.counts[span.type] = (this.counts[span.type] ?? 0) + 1;
    }
    channel.spans.sort((a, b) => a.start - b.start);
  }

  /** Drops text that is released and that no window will read again. */
  #trim(channel: Channel): void {
    const keep = Math.min(channel.released, channel.checked - 2 * this.#options.windowChars);
    if (keep - channel.base < 4096) return;
    channel.text = channel.text.slice(keep - channel.base);
    channel.base = keep;
  }
}
