/**
 * Each ordered pair of formats (caller's → provider's), end to end through canonical form: the exact
 * bytes a translated call sends the provider and gives the caller back, for a request, a plain answer,
 * an answer cut by the output maximum, and a stream. The provider's side is written as the real APIs
 * send it (shapes from the openai and @anthropic-ai/sdk types); the expected texts were worked out
 * from docs/gateway.md "Translation" and the format modules, checked field by field against the
 * real APIs, and are written out literally.
 */
import { describe, expect, it } from "vitest";
import type { FormatName } from "../src/gateway/formats/format.ts";
import { formats, translateRequest } from "../src/gateway/formats/translate.ts";
import { SseSplitter } from "../src/gateway/providers/sse.ts";

const NOW = 1767225600;

const weatherSchema = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };

const requests = {
  messages: {
    model: "claude-sonnet-4-5",
    max_tokens: 1024,
    system: "You are a terse assistant.",
    messages: [
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello! How can I help?" },
      { role: "user", content: "What is the weather in Paris?" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me check." },
          { type: "tool_use", id: "toolu_01A", name: "get_weather", input: { city: "Paris" } },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01A", content: "18°C and sunny" }] },
    ],
    tools: [{ name: "get_weather", description: "Current weather in a city", input_schema: weatherSchema }],
  },
  responses: {
    model: "gpt-5",
    instructions: "You are a terse assistant.",
    input: [
      { role: "user", content: "Hi" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Hello! How can I help?" }] },
      { role: "user", content: [{ type: "input_text", text: "What is the weather in Paris?" }] },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Let me check." }] },
      { type: "function_call", call_id: "call_01A", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
      { type: "function_call_output", call_id: "call_01A", output: "18°C and sunny" },
    ],
    tools: [{ type: "function", name: "get_weather", description: "Current weather in a city", parameters: weatherSchema, strict: true }],
    max_output_tokens: 1024,
  },
  chat: {
    model: "gpt-4o",
    messages: [
      { role: "system", content: "You are a terse assistant." },
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello! How can I help?" },
      { role: "user", content: "What is the weather in Paris?" },
      {
        role: "assistant",
        content: "Let me check.",
        tool_calls: [{ id: "call_01A", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }],
      },
      { role: "tool", tool_call_id: "call_01A", content: "18°C and sunny" },
    ],
    tools: [{ type: "function", function: { name: "get_weather", description: "Current weather in a city", parameters: weatherSchema } }],
    max_completion_tokens: 1024,
  },
};

const anthropicUsage = {
  input_tokens: 20,
  cache_creation_input_tokens: 10,
  cache_read_input_tokens: 100,
  cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 0 },
  output_tokens: 35,
  server_tool_use: null,
  service_tier: "standard",
};

const responsesUsage = {
  input_tokens: 130,
  input_tokens_details: { cached_tokens: 100, cache_write_tokens: 0 },
  output_tokens: 60,
  output_tokens_details: { reasoning_tokens: 25 },
  total_tokens: 190,
};

const chatUsage = {
  prompt_tokens: 130,
  completion_tokens: 60,
  total_tokens: 190,
  prompt_tokens_details: { cached_tokens: 100, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 25, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};

function response(status: string, incomplete: string | null, output: unknown[]) {
  return {
    id: "resp_01",
    object: "response",
    created_at: 1767225500,
    status,
    background: false,
    completed_at: status === "completed" ? 1767225502 : null,
    error: null,
    incomplete_details: incomplete === null ? null : { reason: incomplete },
    instructions: "You are a terse assistant.",
    max_output_tokens: 1024,
    max_tool_calls: null,
    model: "gpt-5-2025-08-07",
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    prompt_cache_key: null,
    reasoning: { effort: "medium", summary: null },
    safety_identifier: null,
    service_tier: "default",
    store: true,
    temperature: 1,
    text: { format: { type: "text" }, verbosity: "medium" },
    tool_choice: "auto",
    tools: [],
    top_logprobs: 0,
    top_p: 1,
    truncation: "disabled",
    usage: responsesUsage,
    user: null,
    metadata: {},
  };
}

const reasoningItem = { id: "rs_01", type: "reasoning", summary: [] };
const outputText = (text: string) => ({ type: "output_text", annotations: [], logprobs: [], text });

const answers = {
  messages: {
    id: "msg_01",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-4-5-20250929",
    content: [
      { type: "text", text: "Let me check." },
      { type: "tool_use", id: "toolu_01B", name: "get_weather", input: { city: "Paris" } },
    ],
    stop_reason: "tool_use",
    stop_sequence: null,
    usage: anthropicUsage,
  },
  responses: response("completed", null, [
    reasoningItem,
    { id: "msg_01", type: "message", status: "completed", role: "assistant", content: [outputText("Let me check.")] },
    { id: "fc_01", type: "function_call", status: "completed", arguments: "{\"city\":\"Paris\"}", call_id: "call_01B", name: "get_weather" },
  ]),
  chat: {
    id: "chatcmpl-01",
    object: "chat.completion",
    created: 1767225500,
    model: "gpt-4o-2024-08-06",
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: "Let me check.",
          refusal: null,
          annotations: [],
          tool_calls: [{ id: "call_01B", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }],
        },
        logprobs: null,
        finish_reason: "tool_calls",
      },
    ],
    usage: chatUsage,
    service_tier: "default",
    system_fingerprint: "fp_01",
  },
};

const maxedAnswers = {
  messages: {
    ...answers.messages,
    content: [{ type: "text", text: "The weather in Paris is" }],
    stop_reason: "max_tokens",
  },
  responses: response("incomplete", "max_output_tokens", [
    reasoningItem,
    { id: "msg_01", type: "message", status: "incomplete", role: "assistant", content: [outputText("The weather in Paris is")] },
  ]),
  chat: {
    ...answers.chat,
    choices: [
      { index: 0, message: { role: "assistant", content: "The weather in Paris is", refusal: null, annotations: [] }, logprobs: null, finish_reason: "length" },
    ],
  },
};

const anthropicEvent = (data: Record<string, unknown>) => `event: ${data.type as string}\ndata: ${JSON.stringify(data)}\n\n`;
let sequence = 0;
const openaiEvent = (data: Record<string, unknown>) => {
  const { type, ...rest } = data;
  return `event: ${type as string}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...rest })}\n\n`;
};
const chunkHead = { id: "chatcmpl-01", object: "chat.completion.chunk", created: 1767225500, model: "gpt-4o-2024-08-06", service_tier: "default", system_fingerprint: "fp_01" };
const chatChunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ ...chunkHead, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null })}\n\n`;

const streamingResponse = (status: string, output: unknown[], usage: unknown) => ({ ...response(status, null, output), usage });
const textItem = { id: "msg_01", type: "message", status: "completed", role: "assistant", content: [outputText("Let me check.")] };
const callItem = { id: "fc_01", type: "function_call", status: "completed", arguments: "{\"city\":\"Paris\"}", call_id: "call_01B", name: "get_weather" };

const streams = {
  messages: [
    anthropicEvent({
      type: "message_start",
      message: {
        model: "claude-sonnet-4-5-20250929",
        id: "msg_01",
        type: "message",
        role: "assistant",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...anthropicUsage, output_tokens: 1 },
      },
    }),
    anthropicEvent({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    anthropicEvent({ type: "ping" }),
    anthropicEvent({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Let me" } }),
    anthropicEvent({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: " check." } }),
    anthropicEvent({ type: "content_block_stop", index: 0 }),
    anthropicEvent({ type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_01B", name: "get_weather", input: {} } }),
    anthropicEvent({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "" } }),
    anthropicEvent({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{\"city\":" } }),
    anthropicEvent({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: " \"Paris\"}" } }),
    anthropicEvent({ type: "content_block_stop", index: 1 }),
    anthropicEvent({
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { input_tokens: 20, cache_creation_input_tokens: 10, cache_read_input_tokens: 100, output_tokens: 35, server_tool_use: null },
    }),
    anthropicEvent({ type: "message_stop" }),
  ].join(""),
  responses: [
    openaiEvent({ type: "response.created", response: streamingResponse("in_progress", [], null) }),
    openaiEvent({ type: "response.in_progress", response: streamingResponse("in_progress", [], null) }),
    openaiEvent({ type: "response.output_item.added", output_index: 0, item: reasoningItem }),
    openaiEvent({ type: "response.output_item.done", output_index: 0, item: reasoningItem }),
    openaiEvent({ type: "response.output_item.added", output_index: 1, item: { ...textItem, status: "in_progress", content: [] } }),
    openaiEvent({ type: "response.content_part.added", item_id: "msg_01", output_index: 1, content_index: 0, part: outputText("") }),
    openaiEvent({ type: "response.output_text.delta", item_id: "msg_01", output_index: 1, content_index: 0, delta: "Let me", logprobs: [] }),
    openaiEvent({ type: "response.output_text.delta", item_id: "msg_01", output_index: 1, content_index: 0, delta: " check.", logprobs: [] }),
    openaiEvent({ type: "response.output_text.done", item_id: "msg_01", output_index: 1, content_index: 0, text: "Let me check.", logprobs: [] }),
    openaiEvent({ type: "response.content_part.done", item_id: "msg_01", output_index: 1, content_index: 0, part: outputText("Let me check.") }),
    openaiEvent({ type: "response.output_item.done", output_index: 1, item: textItem }),
    openaiEvent({ type: "response.output_item.added", output_index: 2, item: { ...callItem, status: "in_progress", arguments: "" } }),
    openaiEvent({ type: "response.function_call_arguments.delta", item_id: "fc_01", output_index: 2, delta: "{\"city\":" }),
    openaiEvent({ type: "response.function_call_arguments.delta", item_id: "fc_01", output_index: 2, delta: "\"Paris\"}" }),
    openaiEvent({ type: "response.function_call_arguments.done", item_id: "fc_01", output_index: 2, arguments: "{\"city\":\"Paris\"}" }),
    openaiEvent({ type: "response.output_item.done", output_index: 2, item: callItem }),
    openaiEvent({ type: "response.completed", response: streamingResponse("completed", [reasoningItem, textItem, callItem], responsesUsage) }),
  ].join(""),
  chat: [
    chatChunk({ role: "assistant", content: "", refusal: null }),
    chatChunk({ content: "Let me" }),
    chatChunk({ content: " check." }),
    chatChunk({ tool_calls: [{ index: 0, id: "call_01B", type: "function", function: { name: "get_weather", arguments: "" } }] }),
    chatChunk({ tool_calls: [{ index: 0, function: { arguments: "{\"city\":" } }] }),
    chatChunk({ tool_calls: [{ index: 0, function: { arguments: "\"Paris\"}" } }] }),
    chatChunk({}, "tool_calls"),
    `data: ${JSON.stringify({ ...chunkHead, choices: [], usage: chatUsage })}\n\n`,
    "data: [DONE]\n\n",
  ].join(""),
};


// The three steps of a translated call, as the data plane runs them.

function request(from: FormatName, to: FormatName): string {
  return translateRequest(structuredClone(requests[from]), from, to, "upstream-model", 4096).body.toString("utf8");
}

function answer(from: FormatName, to: FormatName, body: unknown): string {
  return JSON.stringify(formats[from].writeAnswer(formats[to].readAnswer(structuredClone(body), NOW)));
}

function stream(from: FormatName, to: FormatName): string {
  const reader = formats[to].streamReader(NOW);
  const writer = formats[from].streamWriter({ streamUsage: true });
  let written = "";
  for (const event of new SseSplitter().push(Buffer.from(streams[to], "utf8"))) {
    for (const canonical of reader.read(event)) written += writer.write(canonical);
  }
  for (const canonical of reader.end()) written += writer.write(canonical);
  return written;
}


describe("messages caller → responses provider", () => {
  it("request: the exact JSON the provider is sent", () => {
    expect(request("messages", "responses")).toBe(String.raw`{"model":"upstream-model","instructions":"You are a terse assistant.","input":[{"role":"user","content":[{"type":"input_text","text":"Hi"}]},{"role":"assistant","content":[{"type":"output_text","text":"Hello! How can I help?"}]},{"role":"user","content":[{"type":"input_text","text":"What is the weather in Paris?"}]},{"role":"assistant","content":[{"type":"output_text","text":"Let me check."}]},{"type":"function_call","call_id":"toolu_01A","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"toolu_01A","output":"18°C and sunny"}],"tools":[{"type":"function","name":"get_weather","description":"Current weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"strict":false}],"max_output_tokens":1024}`);
  });
  it("answer with text and a tool call: the exact JSON the caller gets", () => {
    expect(answer("messages", "responses", answers.responses)).toBe(String.raw`{"id":"resp_01","type":"message","role":"assistant","model":"gpt-5-2025-08-07","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"call_01B","name":"get_weather","input":{"city":"Paris"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":60}}`);
  });
  it("answer stopped by the output maximum: the exact JSON the caller gets", () => {
    expect(answer("messages", "responses", maxedAnswers.responses)).toBe(String.raw`{"id":"resp_01","type":"message","role":"assistant","model":"gpt-5-2025-08-07","content":[{"type":"text","text":"The weather in Paris is"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":60}}`);
  });
  it("stream of text then a tool call: the exact SSE the caller gets", () => {
    expect(stream("messages", "responses")).toBe(String.raw`event: message_start
data: {"type":"message_start","message":{"id":"resp_01","type":"message","role":"assistant","model":"gpt-5-2025-08-07","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" check."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_01B","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":60}}

event: message_stop
data: {"type":"message_stop"}

`);
  });
});

describe("messages caller → chat completions provider", () => {
  it("request: the exact JSON the provider is sent", () => {
    expect(request("messages", "chat")).toBe(String.raw`{"model":"upstream-model","messages":[{"role":"system","content":"You are a terse assistant."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello! How can I help?"},{"role":"user","content":"What is the weather in Paris?"},{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"toolu_01A","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"toolu_01A","content":"18°C and sunny"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}}],"max_tokens":1024}`);
  });
  it("answer with text and a tool call: the exact JSON the caller gets", () => {
    expect(answer("messages", "chat", answers.chat)).toBe(String.raw`{"id":"chatcmpl-01","type":"message","role":"assistant","model":"gpt-4o-2024-08-06","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"call_01B","name":"get_weather","input":{"city":"Paris"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":60}}`);
  });
  it("answer stopped by the output maximum: the exact JSON the caller gets", () => {
    expect(answer("messages", "chat", maxedAnswers.chat)).toBe(String.raw`{"id":"chatcmpl-01","type":"message","role":"assistant","model":"gpt-4o-2024-08-06","content":[{"type":"text","text":"The weather in Paris is"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":60}}`);
  });
  it("stream of text then a tool call: the exact SSE the caller gets", () => {
    expect(stream("messages", "chat")).toBe(String.raw`event: message_start
data: {"type":"message_start","message":{"id":"chatcmpl-01","type":"message","role":"assistant","model":"gpt-4o-2024-08-06","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" check."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_01B","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":60}}

event: message_stop
data: {"type":"message_stop"}

`);
  });
});

describe("responses caller → messages provider", () => {
  // A Responses caller's `strict` reaches Anthropic's tool as its own `strict`.
  it("request: the exact JSON the provider is sent", () => {
    expect(request("responses", "messages")).toBe(String.raw`{"model":"upstream-model","max_tokens":1024,"system":"You are a terse assistant.","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello! How can I help?"},{"role":"user","content":"What is the weather in Paris?"},{"role":"assistant","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"call_01A","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_01A","content":"18°C and sunny"}]}],"tools":[{"name":"get_weather","description":"Current weather in a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"strict":true}]}`);
  });
  it("answer with text and a tool call: the exact JSON the caller gets", () => {
    expect(answer("responses", "messages", answers.messages)).toBe(String.raw`{"id":"msg_01","object":"response","created_at":1767225600,"status":"completed","background":false,"completed_at":1767225600,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"claude-sonnet-4-5-20250929","output":[{"id":"msg_0_msg_01","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Let me check."}]},{"id":"fc_toolu_01B","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"toolu_01B","name":"get_weather"}],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":{"input_tokens":130,"input_tokens_details":{"cached_tokens":100,"cache_write_tokens":10},"output_tokens":35,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":165},"metadata":{},"access_programs":null}`);
  });
  // An answer cut by the output maximum is `incomplete`, and so is the message item that was cut.
  it("answer stopped by the output maximum: the exact JSON the caller gets", () => {
    expect(answer("responses", "messages", maxedAnswers.messages)).toBe(String.raw`{"id":"msg_01","object":"response","created_at":1767225600,"status":"incomplete","background":false,"completed_at":null,"error":null,"incomplete_details":{"reason":"max_output_tokens"},"instructions":null,"max_output_tokens":null,"model":"claude-sonnet-4-5-20250929","output":[{"id":"msg_0_msg_01","type":"message","status":"incomplete","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"The weather in Paris is"}]}],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":{"input_tokens":130,"input_tokens_details":{"cached_tokens":100,"cache_write_tokens":10},"output_tokens":35,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":165},"metadata":{},"access_programs":null}`);
  });
  it("stream of text then a tool call: the exact SSE the caller gets", () => {
    expect(stream("responses", "messages")).toBe(String.raw`event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"msg_01","object":"response","created_at":1767225600,"status":"in_progress","background":false,"completed_at":null,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"claude-sonnet-4-5-20250929","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":null,"metadata":{},"access_programs":null}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"msg_01","object":"response","created_at":1767225600,"status":"in_progress","background":false,"completed_at":null,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"claude-sonnet-4-5-20250929","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":null,"metadata":{},"access_programs":null}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_0_msg_01","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_0_msg_01","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_0_msg_01","output_index":0,"content_index":0,"delta":"Let me","logprobs":[]}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_0_msg_01","output_index":0,"content_index":0,"delta":" check.","logprobs":[]}

event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":6,"item_id":"msg_0_msg_01","output_index":0,"content_index":0,"text":"Let me check.","logprobs":[]}

event: response.content_part.done
data: {"type":"response.content_part.done","sequence_number":7,"item_id":"msg_0_msg_01","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"Let me check."}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":{"id":"msg_0_msg_01","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Let me check."}]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":9,"output_index":1,"item":{"id":"fc_toolu_01B","type":"function_call","status":"in_progress","arguments":"","call_id":"toolu_01B","name":"get_weather"}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":10,"item_id":"fc_toolu_01B","output_index":1,"delta":"{\"city\":"}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":11,"item_id":"fc_toolu_01B","output_index":1,"delta":" \"Paris\"}"}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","sequence_number":12,"item_id":"fc_toolu_01B","output_index":1,"arguments":"{\"city\": \"Paris\"}","name":"get_weather"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":13,"output_index":1,"item":{"id":"fc_toolu_01B","type":"function_call","status":"completed","arguments":"{\"city\": \"Paris\"}","call_id":"toolu_01B","name":"get_weather"}}

event: response.completed
data: {"type":"response.completed","sequence_number":14,"response":{"id":"msg_01","object":"response","created_at":1767225600,"status":"completed","background":false,"completed_at":1767225600,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"claude-sonnet-4-5-20250929","output":[{"id":"msg_0_msg_01","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Let me check."}]},{"id":"fc_toolu_01B","type":"function_call","status":"completed","arguments":"{\"city\": \"Paris\"}","call_id":"toolu_01B","name":"get_weather"}],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":{"input_tokens":130,"input_tokens_details":{"cached_tokens":100,"cache_write_tokens":10},"output_tokens":35,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":165},"metadata":{},"access_programs":null}}

`);
  });
});

describe("responses caller → chat completions provider", () => {
  it("request: the exact JSON the provider is sent", () => {
    expect(request("responses", "chat")).toBe(String.raw`{"model":"upstream-model","messages":[{"role":"system","content":"You are a terse assistant."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello! How can I help?"},{"role":"user","content":"What is the weather in Paris?"},{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"call_01A","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_01A","content":"18°C and sunny"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"strict":true}}],"max_tokens":1024}`);
  });
  it("answer with text and a tool call: the exact JSON the caller gets", () => {
    expect(answer("responses", "chat", answers.chat)).toBe(String.raw`{"id":"chatcmpl-01","object":"response","created_at":1767225500,"status":"completed","background":false,"completed_at":1767225500,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4o-2024-08-06","output":[{"id":"msg_0_chatcmpl-01","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Let me check."}]},{"id":"fc_call_01B","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_01B","name":"get_weather"}],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":{"input_tokens":130,"input_tokens_details":{"cached_tokens":100,"cache_write_tokens":0},"output_tokens":60,"output_tokens_details":{"reasoning_tokens":25},"total_tokens":190},"metadata":{},"access_programs":null}`);
  });
  // An answer cut by the output maximum is `incomplete`, and so is the message item that was cut.
  it("answer stopped by the output maximum: the exact JSON the caller gets", () => {
    expect(answer("responses", "chat", maxedAnswers.chat)).toBe(String.raw`{"id":"chatcmpl-01","object":"response","created_at":1767225500,"status":"incomplete","background":false,"completed_at":null,"error":null,"incomplete_details":{"reason":"max_output_tokens"},"instructions":null,"max_output_tokens":null,"model":"gpt-4o-2024-08-06","output":[{"id":"msg_0_chatcmpl-01","type":"message","status":"incomplete","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"The weather in Paris is"}]}],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":{"input_tokens":130,"input_tokens_details":{"cached_tokens":100,"cache_write_tokens":0},"output_tokens":60,"output_tokens_details":{"reasoning_tokens":25},"total_tokens":190},"metadata":{},"access_programs":null}`);
  });
  it("stream of text then a tool call: the exact SSE the caller gets", () => {
    expect(stream("responses", "chat")).toBe(String.raw`event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"chatcmpl-01","object":"response","created_at":1767225500,"status":"in_progress","background":false,"completed_at":null,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4o-2024-08-06","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":null,"metadata":{},"access_programs":null}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"chatcmpl-01","object":"response","created_at":1767225500,"status":"in_progress","background":false,"completed_at":null,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4o-2024-08-06","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":null,"metadata":{},"access_programs":null}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_0_chatcmpl-01","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_0_chatcmpl-01","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_0_chatcmpl-01","output_index":0,"content_index":0,"delta":"Let me","logprobs":[]}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_0_chatcmpl-01","output_index":0,"content_index":0,"delta":" check.","logprobs":[]}

event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":6,"item_id":"msg_0_chatcmpl-01","output_index":0,"content_index":0,"text":"Let me check.","logprobs":[]}

event: response.content_part.done
data: {"type":"response.content_part.done","sequence_number":7,"item_id":"msg_0_chatcmpl-01","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"Let me check."}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":{"id":"msg_0_chatcmpl-01","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Let me check."}]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":9,"output_index":1,"item":{"id":"fc_call_01B","type":"function_call","status":"in_progress","arguments":"","call_id":"call_01B","name":"get_weather"}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":10,"item_id":"fc_call_01B","output_index":1,"delta":"{\"city\":"}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":11,"item_id":"fc_call_01B","output_index":1,"delta":"\"Paris\"}"}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","sequence_number":12,"item_id":"fc_call_01B","output_index":1,"arguments":"{\"city\":\"Paris\"}","name":"get_weather"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":13,"output_index":1,"item":{"id":"fc_call_01B","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_01B","name":"get_weather"}}

event: response.completed
data: {"type":"response.completed","sequence_number":14,"response":{"id":"chatcmpl-01","object":"response","created_at":1767225500,"status":"completed","background":false,"completed_at":1767225500,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4o-2024-08-06","output":[{"id":"msg_0_chatcmpl-01","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Let me check."}]},{"id":"fc_call_01B","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_01B","name":"get_weather"}],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":{"input_tokens":130,"input_tokens_details":{"cached_tokens":100,"cache_write_tokens":0},"output_tokens":60,"output_tokens_details":{"reasoning_tokens":25},"total_tokens":190},"metadata":{},"access_programs":null}}

`);
  });
});

describe("chat completions caller → messages provider", () => {
  it("request: the exact JSON the provider is sent", () => {
    expect(request("chat", "messages")).toBe(String.raw`{"model":"upstream-model","max_tokens":1024,"system":"You are a terse assistant.","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello! How can I help?"},{"role":"user","content":"What is the weather in Paris?"},{"role":"assistant","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"call_01A","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_01A","content":"18°C and sunny"}]}],"tools":[{"name":"get_weather","description":"Current weather in a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}]}`);
  });
  it("answer with text and a tool call: the exact JSON the caller gets", () => {
    expect(answer("chat", "messages", answers.messages)).toBe(String.raw`{"id":"msg_01","object":"chat.completion","created":1767225600,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"message":{"role":"assistant","content":"Let me check.","refusal":null,"annotations":[],"tool_calls":[{"id":"toolu_01B","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":130,"completion_tokens":35,"total_tokens":165,"prompt_tokens_details":{"cached_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`);
  });
  it("answer stopped by the output maximum: the exact JSON the caller gets", () => {
    expect(answer("chat", "messages", maxedAnswers.messages)).toBe(String.raw`{"id":"msg_01","object":"chat.completion","created":1767225600,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"message":{"role":"assistant","content":"The weather in Paris is","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":130,"completion_tokens":35,"total_tokens":165,"prompt_tokens_details":{"cached_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`);
  });
  it("stream of text then a tool call: the exact SSE the caller gets", () => {
    expect(stream("chat", "messages")).toBe(String.raw`data: {"id":"msg_01","object":"chat.completion.chunk","created":1767225600,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"msg_01","object":"chat.completion.chunk","created":1767225600,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{"content":"Let me"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"msg_01","object":"chat.completion.chunk","created":1767225600,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{"content":" check."},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"msg_01","object":"chat.completion.chunk","created":1767225600,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"toolu_01B","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"msg_01","object":"chat.completion.chunk","created":1767225600,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"msg_01","object":"chat.completion.chunk","created":1767225600,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"Paris\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"msg_01","object":"chat.completion.chunk","created":1767225600,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}

data: {"id":"msg_01","object":"chat.completion.chunk","created":1767225600,"model":"claude-sonnet-4-5-20250929","choices":[],"usage":{"prompt_tokens":130,"completion_tokens":35,"total_tokens":165,"prompt_tokens_details":{"cached_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}

data: [DONE]

`);
  });
});

describe("chat completions caller → responses provider", () => {
  it("request: the exact JSON the provider is sent", () => {
    expect(request("chat", "responses")).toBe(String.raw`{"model":"upstream-model","instructions":"You are a terse assistant.","input":[{"role":"user","content":[{"type":"input_text","text":"Hi"}]},{"role":"assistant","content":[{"type":"output_text","text":"Hello! How can I help?"}]},{"role":"user","content":[{"type":"input_text","text":"What is the weather in Paris?"}]},{"role":"assistant","content":[{"type":"output_text","text":"Let me check."}]},{"type":"function_call","call_id":"call_01A","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_01A","output":"18°C and sunny"}],"tools":[{"type":"function","name":"get_weather","description":"Current weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"strict":false}],"max_output_tokens":1024}`);
  });
  it("answer with text and a tool call: the exact JSON the caller gets", () => {
    expect(answer("chat", "responses", answers.responses)).toBe(String.raw`{"id":"resp_01","object":"chat.completion","created":1767225500,"model":"gpt-5-2025-08-07","choices":[{"index":0,"message":{"role":"assistant","content":"Let me check.","refusal":null,"annotations":[],"tool_calls":[{"id":"call_01B","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":130,"completion_tokens":60,"total_tokens":190,"prompt_tokens_details":{"cached_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":25,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`);
  });
  it("answer stopped by the output maximum: the exact JSON the caller gets", () => {
    expect(answer("chat", "responses", maxedAnswers.responses)).toBe(String.raw`{"id":"resp_01","object":"chat.completion","created":1767225500,"model":"gpt-5-2025-08-07","choices":[{"index":0,"message":{"role":"assistant","content":"The weather in Paris is","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":130,"completion_tokens":60,"total_tokens":190,"prompt_tokens_details":{"cached_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":25,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`);
  });
  it("stream of text then a tool call: the exact SSE the caller gets", () => {
    expect(stream("chat", "responses")).toBe(String.raw`data: {"id":"resp_01","object":"chat.completion.chunk","created":1767225500,"model":"gpt-5-2025-08-07","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"resp_01","object":"chat.completion.chunk","created":1767225500,"model":"gpt-5-2025-08-07","choices":[{"index":0,"delta":{"content":"Let me"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"resp_01","object":"chat.completion.chunk","created":1767225500,"model":"gpt-5-2025-08-07","choices":[{"index":0,"delta":{"content":" check."},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"resp_01","object":"chat.completion.chunk","created":1767225500,"model":"gpt-5-2025-08-07","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_01B","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"resp_01","object":"chat.completion.chunk","created":1767225500,"model":"gpt-5-2025-08-07","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"resp_01","object":"chat.completion.chunk","created":1767225500,"model":"gpt-5-2025-08-07","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"resp_01","object":"chat.completion.chunk","created":1767225500,"model":"gpt-5-2025-08-07","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}

data: {"id":"resp_01","object":"chat.completion.chunk","created":1767225500,"model":"gpt-5-2025-08-07","choices":[],"usage":{"prompt_tokens":130,"completion_tokens":60,"total_tokens":190,"prompt_tokens_details":{"cached_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":25,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}

data: [DONE]

`);
  });
});
