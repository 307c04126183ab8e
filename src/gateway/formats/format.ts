import type { SseEvent } from "../providers/sse.ts";
import type { CanonicalAnswer, CanonicalRequest, StreamEvent } from "./canonical.ts";

/** The three client formats, named as the gateway's endpoints are. */
export type FormatName = "messages" | "responses" | "chat";

/** Reads a provider's stream, event by event, into canonical events. */
export interface StreamReader {
  /**
   * The canonical events this provider event completes (often one, sometimes none or several).
   * A provider's own in-stream error throws a GatewayError (502) carrying the provider's message.
   */
  read(event: SseEvent): StreamEvent[];
  /**
   * After the provider's last event: what is still owed (for example a chat stream's `stop` when
   * it ended without [DONE] after its finish reason). Throws when the stream ended before its
   * answer did (no `stop` could be made): the provider cut it short.
   */
  end(): StreamEvent[];
}

/** Writes canonical events as this format's server-sent events, each as it comes. */
export interface StreamWriter {
  /** The SSE bytes (complete events, blank line included) for one canonical event; may be "". */
  write(event: StreamEvent): string;
  /** The format's own in-stream error event, for a failure after the first event. */
  error(message: string): string;
}

/** One client format: its requests, answers and streams, read into and written from canonical form. */
export interface WireFormat {
  readonly name: FormatName;
  /** A caller's request. Throws `untranslatable` (400) for anything canonical form cannot carry. */
  readRequest(body: Record<string, unknown>): CanonicalRequest;
  /**
   * The request to send a provider that speaks this format. Throws `untranslatable` (400) for what
   * this format cannot express. `defaultMaxTokens` fills a maximum this format requires.
   */
  writeRequest(request: CanonicalRequest, defaultMaxTokens: number): Record<string, unknown>;
  /**
   * A provider's non-streamed answer (parsed JSON). Throws `unreadableAnswer` (502) when it is not
   * one. `now` (Unix seconds) is the answer's `created` when the format carries none.
   */
  readAnswer(body: unknown, now: number): CanonicalAnswer;
  /** The answer as this format's caller expects it. */
  writeAnswer(answer: CanonicalAnswer): Record<string, unknown>;
  /** `now` (Unix seconds): the stream's `created` when the format carries none. */
  streamReader(now: number): StreamReader;
  /** For the caller's request, as read: chat completions writes a usage chunk only when asked. */
  streamWriter(request: Pick<CanonicalRequest, "streamUsage">): StreamWriter;
}
