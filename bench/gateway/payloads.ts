/**
 * What the fake provider answers and what the load generator sends: fixed bytes, made once, so
 * that neither side spends time building them. The gateway passes answers through byte for byte,
 * so every variant must deliver exactly these lengths.
 */
import { prose } from "./prose.ts";

/** The model every measured request names; the gateway's allow list and routing both match it. */
export const benchModel = "bench-model";
/** Streams for this model send their first event and then wait for the provider's "release". */
export const holdModel = "bench-hold";

/** Number of server-sent events in a streamed answer (of every model but the prose model). */
export const streamEventCount = 20;

/** Answers about 1 KB of ordinary prose; streamed, in deltas of 4 characters, as a model's tokens come. */
export const proseModel = "bench-prose";
/** Answers a card number: what an output PII guardrail stops (a probe that output guardrails are on). */
export const piiModel = "bench-pii";
/**
 * Answers as the bench model does, with a reply number of fixed width that the fake provider
 * stamps anew on every answer (`replyStamp`): answers of one length whose text is never the
 * same twice, as a model's are, so that output guardrails cannot answer from kept verdicts.
 */
export const variedModel = "bench-varied";
/** The placeholder in the varied model's answers, the width of the number stamped over it. */
export const replyStamp = "000000";
const proseAnswer = prose(1024);

/** The text a model answers. */
function textOf(model: string): string {
  if (model === proseModel) return proseAnswer;
  if (model === variedModel) return `${text} (reply ${replyStamp})`;
  return model === piiModel ? "Your card number is 4111 1111 1111 1111." : text;
}

/** The stream's text deltas: 4 characters each for the prose model, else 12 runs of words. */
function deltasOf(model: string): string[] {
  const answer = textOf(model);
  if (model === proseModel) return Array.from({ length: Math.ceil(answer.length / 4) }, (_, i) => answer.slice(i * 4, i * 4 + 4));
  const deltas = 12;
  const words = answer.split(" ");
  return Array.from({ length: deltas }, (_, i) => words.slice(Math.floor((i * words.length) / deltas), Math.floor(((i + 1) * words.length) / deltas)).join(" "));
}

/**
 * A Responses request carrying a conversation of 20 messages (about 8 KB), user and assistant in
 * turn, of about 400 bytes each; the last, the user's, is new on every call (`i`), as a chat's
 * next turn is, and the 19 before it are the same on every call.
 */
export function conversationBody(model: string, i: number, stream = false): Buffer {
  const input = Array.from({ length: 19 }, (_, turn) => ({ role: turn % 2 === 0 ? "user" : "assistant", content: prose(400, 1000 + turn) }));
  input.push({ role: "user", content: `${prose(380, 2000)} (question ${i})` });
  const body: Record<string, unknown> = { model, input, max_output_tokens: 32 };
  if (stream) body.stream = true;
  return Buffer.from(JSON.stringify(body));
}

/** A Responses request; `input` is the caller's text (the guardrails read it). */
export function requestBody(model: string, stream: boolean, input = "Say hello in one short sentence."): Buffer {
  const body: Record<string, unknown> = { model, input, max_output_tokens: 32 };
  if (stream) body.stream = true;
  return Buffer.from(JSON.stringify(body));
}

const createdAt = 1_767_225_600;
const text = "Hello! How can I help you today?";
const usage = { input_tokens: 14, input_tokens_details: { cached_tokens: 0 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 23 };
const messageOf = (model: string) => ({
  id: "msg_bench",
  type: "message",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", annotations: [], logprobs: [], text: textOf(model) }],
});

function response(model: string, done: boolean): Record<string, unknown> {
  const message = messageOf(model);
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
  const pieces = deltasOf(model);
  const message = messageOf(model);
  const text = textOf(model);
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
  if (model !== proseModel && events.length !== streamEventCount) throw new Error(`the stream has ${events.length} events, not ${streamEventCount}`);
  return events.map((event, i) => Buffer.from(`event: ${String(event.type)}\ndata: ${JSON.stringify({ ...event, sequence_number: i })}\n\n`));
}

export const byteLength = (buffers: Buffer[]): number => buffers.reduce((sum, b) => sum + b.length, 0);

/** A Chat Completions request; a streamed one asks for the usage chunk, as a metering client does. */
export function chatRequestBody(model: string, stream: boolean, input = "Say hello in one short sentence."): Buffer {
  const body: Record<string, unknown> = { model, messages: [{ role: "user", content: input }], max_completion_tokens: 32 };
  if (stream) Object.assign(body, { stream: true, stream_options: { include_usage: true } });
  return Buffer.from(JSON.stringify(body));
}

/** An Anthropic Messages request, as an Anthropic SDK sends it. */
export function messagesRequestBody(model: string, stream: boolean, input = "Say hello in one short sentence."): Buffer {
  const body: Record<string, unknown> = { model, max_tokens: 32, messages: [{ role: "user", content: input }] };
  if (stream) body.stream = true;
  return Buffer.from(JSON.stringify(body));
}

const chatUsage = {
  prompt_tokens: 14,
  completion_tokens: 9,
  total_tokens: 23,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};

/** A complete (non-streamed) chat.completion, as OpenAI answers it. */
export function chatCompleteAnswer(model: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      id: "chatcmpl-bench",
      object: "chat.completion",
      created: createdAt,
      model,
      choices: [{ index: 0, message: { role: "assistant", content: text, refusal: null, annotations: [] }, logprobs: null, finish_reason: "stop" }],
      usage: chatUsage,
      service_tier: "default",
      system_fingerprint: "fp_bench",
    }),
  );
}

/**
 * A chat.completion.chunk stream, as OpenAI sends it: the role chunk, 12 content deltas, the
 * finish chunk, with `includeUsage` the usage chunk (empty choices), then `data: [DONE]`. Each
 * event its own buffer; no `event:` field.
 */
export function chatStreamAnswer(model: string, includeUsage: boolean): Buffer[] {
  const deltas = 12;
  const words = text.split(" ");
  const pieces = Array.from({ length: deltas }, (_, i) => words.slice(Math.floor((i * words.length) / deltas), Math.floor(((i + 1) * words.length) / deltas)).join(" "));
  const chunk = (choices: unknown[], usage?: unknown): Record<string, unknown> => ({
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created: createdAt,
    model,
    service_tier: "default",
    system_fingerprint: "fp_bench",
    choices,
    ...(includeUsage ? { usage: usage ?? null } : {}),
  });
  const choice = (delta: Record<string, unknown>, finish: string | null = null) => ({ index: 0, delta, logprobs: null, finish_reason: finish });
  const chunks = [
    chunk([choice({ role: "assistant", content: "", refusal: null })]),
    ...pieces.map((content) => chunk([choice({ content })])),
    chunk([choice({}, "stop")]),
    ...(includeUsage ? [chunk([], chatUsage)] : []),
  ];
  return [...chunks.map((c) => Buffer.from(`data: ${JSON.stringify(c)}\n\n`)), Buffer.from("data: [DONE]\n\n")];
}
