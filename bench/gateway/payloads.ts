/**
 * What the fake provider answers and what the load generator sends: fixed bytes, made once, so
 * that neither side spends time building them. The gateway passes answers through byte for byte,
 * so every variant must deliver exactly these lengths.
 */

/** The model every measured request names; the gateway's allow list and routing both match it. */
export const benchModel = "bench-model";
/** Streams for this model send their first event and then wait for the provider's "release". */
export const holdModel = "bench-hold";

/** Number of server-sent events in a streamed answer. */
export const streamEventCount = 20;

/** A Responses request; `input` is the caller's text (the guardrails read it). */
export function requestBody(model: string, stream: boolean, input = "Say hello in one short sentence."): Buffer {
  const body: Record<string, unknown> = { model, input, max_output_tokens: 32 };
  if (stream) body.stream = true;
  return Buffer.from(JSON.stringify(body));
}

const createdAt = 1_767_225_600;
const text = "Hello! How can I help you today?";
const usage = { input_tokens: 14, input_tokens_details: { cached_tokens: 0 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 23 };
const message = {
  id: "msg_bench",
  type: "message",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", annotations: [], logprobs: [], text }],
};

function response(model: string, done: boolean): Record<string, unknown> {
  return {
    id: "resp_bench",
    object: "response",
    created_at: createdAt,
    status: done ? "completed" : "in_progress",
    error: null,
    incomplete_details: null,
    model,
    output: done ? [message] : [],
    parallel_tool_calls: true,
    temperature: 1,
    tool_choice: "auto",
    tools: [],
    top_p: 1,
    usage: done ? usage : null,
  };
}

/** A complete (non-streamed) Responses answer. */
export function completeAnswer(model: string): Buffer {
  return Buffer.from(JSON.stringify(response(model, true)));
}

/**
 * A Responses stream of exactly `streamEventCount` events, each its own buffer: created,
 * in_progress, output_item.added, content_part.added, 12 text deltas, output_text.done,
 * content_part.done, output_item.done, completed.
 */
export function streamAnswer(model: string): Buffer[] {
  const deltas = 12;
  const words = text.split(" ");
  const pieces = Array.from({ length: deltas }, (_, i) => words.slice(Math.floor((i * words.length) / deltas), Math.floor(((i + 1) * words.length) / deltas)).join(" "));
  const part = { type: "output_text", annotations: [], logprobs: [], text: "" };
  const events: Record<string, unknown>[] = [
    { type: "response.created", response: response(model, false) },
    { type: "response.in_progress", response: response(model, false) },
    { type: "response.output_item.added", output_index: 0, item: { ...message, status: "in_progress", content: [] } },
    { type: "response.content_part.added", item_id: message.id, output_index: 0, content_index: 0, part },
    ...pieces.map((delta) => ({ type: "response.output_text.delta", item_id: message.id, output_index: 0, content_index: 0, delta, logprobs: [] })),
    { type: "response.output_text.done", item_id: message.id, output_index: 0, content_index: 0, text, logprobs: [] },
    { type: "response.content_part.done", item_id: message.id, output_index: 0, content_index: 0, part: { ...part, text } },
    { type: "response.output_item.done", output_index: 0, item: message },
    { type: "response.completed", response: response(model, true) },
  ];
  if (events.length !== streamEventCount) throw new Error(`the stream has ${events.length} events, not ${streamEventCount}`);
  return events.map((event, i) => Buffer.from(`event: ${String(event.type)}\ndata: ${JSON.stringify({ ...event, sequence_number: i })}\n\n`));
}

export const byteLength = (buffers: Buffer[]): number => buffers.reduce((sum, b) => sum + b.length, 0);
