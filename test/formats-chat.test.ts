import OpenAI, { APIError } from "openai";
import { describe, expect, it } from "vitest";
import { GatewayError } from "../src/gateway/dataplane/errors.ts";
import type { CanonicalAnswer, CanonicalRequest, StreamEvent } from "../src/gateway/formats/canonical.ts";
import { chatFormat, chatStreamError } from "../src/gateway/formats/chat.ts";
import { UpstreamConnectionError } from "../src/gateway/providers/errors.ts";
import { SseSplitter } from "../src/gateway/providers/sse.ts";

const PREFIX = "This request cannot be translated for the provider it is routed to: ";
const UNREADABLE = "The provider's answer could not be read: ";

/** The error a call throws (the test fails when it throws none). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

function gatewayError(fn: () => unknown): { status: number; message: string } {
  const err = thrown(fn);
  expect(err).toBeInstanceOf(GatewayError);
  const { status, message } = err as GatewayError;
  return { status, message };
}

const read = (body: Record<string, unknown>) => chatFormat.readRequest(body);
const hi = [{ role: "user", content: "Hi" }];

/** The canonical request a plain `{model, messages: hi}` reads as. */
const plain: CanonicalRequest = {
  model: "gpt-4o",
  system: [],
  messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
  tools: [],
  toolChoice: null,
  maxOutputTokens: null,
  temperature: null,
  topP: null,
  topK: null,
  stopSequences: [],
  stream: false,
  streamUsage: false,
  parallelToolCalls: null,
  responseFormat: null,
  reasoningEffort: null,
  user: null,
};

describe("chat: reading requests", () => {
  it("reads a realistic multi-turn request with every option", () => {
    const request = read({
      model: "gpt-4o",
      messages: [
        { role: "system", content: "You are terse." },
        {
          role: "user",
          content: [
            { type: "text", text: "What is in these?" },
            { type: "image_url", image_url: { url: "https://example.com/cat.png", detail: "high" } },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          ],
        },
        {
          role: "assistant",
          content: "Checking the weather.",
          refusal: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
            { id: "call_2", type: "function", function: { name: "get_time", arguments: "{}" } },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "18°C" },
        { role: "tool", tool_call_id: "call_2", content: [{ type: "text", text: "12:00" }] },
        { role: "developer", content: [{ type: "text", text: "Answer in French." }] },
        { role: "user", content: "And now?" },
      ],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            description: "Current weather",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
            strict: true,
          },
        },
        { type: "function", function: { name: "get_time" } },
      ],
      tool_choice: "required",
      max_completion_tokens: 500,
      max_tokens: 100,
      temperature: 0.2,
      top_p: 0.9,
      stop: ["END", "STOP"],
      n: 1,
      stream: true,
      stream_options: { include_usage: true, include_obfuscation: false },
      parallel_tool_calls: false,
      response_format: {
        type: "json_schema",
        json_schema: { name: "weather", description: "A forecast", schema: { type: "object" }, strict: true },
      },
      reasoning_effort: "low",
      user: "user-42",
      safety_identifier: "safety-1",
      store: false,
      metadata: { team: "a" },
      service_tier: "auto",
      prompt_cache_key: "key-1",
      logprobs: false,
      frequency_penalty: 0,
      presence_penalty: 0,
      modalities: ["text"],
      seed: null,
      top_logprobs: null,
    });
    expect(request).toEqual({
      model: "gpt-4o",
      system: ["You are terse.", "Answer in French."],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is in these?" },
            { type: "image", source: { kind: "url", url: "https://example.com/cat.png" } },
            { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } },
          ],
        },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Checking the weather." },
            { type: "tool_call", id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
            { type: "tool_call", id: "call_2", name: "get_time", arguments: "{}" },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", callId: "call_1", content: "18°C", isError: false },
            { type: "tool_result", callId: "call_2", content: [{ type: "text", text: "12:00" }], isError: false },
            { type: "text", text: "And now?" },
          ],
        },
      ],
      tools: [
        {
          name: "get_weather",
          description: "Current weather",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          strict: true,
        },
        { name: "get_time", description: null, parameters: { type: "object", properties: {} }, strict: null },
      ],
      toolChoice: { type: "required" },
      maxOutputTokens: 500,
      temperature: 0.2,
      topP: 0.9,
      topK: null,
      stopSequences: ["END", "STOP"],
      stream: true,
      streamUsage: true,
      parallelToolCalls: false,
      responseFormat: { type: "json_schema", name: "weather", schema: { type: "object" }, strict: true, description: "A forecast" },
      reasoningEffort: "low",
      user: "user-42",
    } satisfies CanonicalRequest);
  });

  it("reads a plain request with every option left at its default", () => {
    expect(read({ model: "gpt-4o", messages: hi })).toEqual(plain);
  });

  it("reads null options as absent", () => {
    const request = read({
      model: "gpt-4o",
      messages: hi,
      tools: null,
      tool_choice: null,
      max_completion_tokens: null,
      max_tokens: null,
      temperature: null,
      top_p: null,
      stop: null,
      n: null,
      stream: null,
      stream_options: null,
      parallel_tool_calls: null,
      response_format: null,
      reasoning_effort: null,
      user: null,
      safety_identifier: null,
      logprobs: null,
      top_logprobs: null,
      logit_bias: null,
      seed: null,
      frequency_penalty: null,
      presence_penalty: null,
      audio: null,
      modalities: null,
      prediction: null,
      web_search_options: null,
      functions: null,
      function_call: null,
      verbosity: null,
    });
    expect(request).toEqual(plain);
  });

  it("hoists system and developer messages, text parts one by one, in order", () => {
    const request = read({
      model: "gpt-4o",
      messages: [
        { role: "developer", content: "First." },
        { role: "user", content: "Hi" },
        { role: "system", content: [{ type: "text", text: "Second." }, { type: "text", text: "Third." }] },
        { role: "system", content: "" },
      ],
    });
    expect(request.system).toEqual(["First.", "Second.", "Third."]);
    expect(request.messages).toEqual(plain.messages);
  });

  it("merges consecutive messages of the same role", () => {
    const request = read({
      model: "gpt-4o",
      messages: [
        { role: "user", content: "One" },
        { role: "user", content: [{ type: "text", text: "Two" }] },
        { role: "assistant", content: "A" },
        { role: "assistant", content: [{ type: "text", text: "B" }] },
      ],
    });
    expect(request.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "One" }, { type: "text", text: "Two" }] },
      { role: "assistant", content: [{ type: "text", text: "A" }, { type: "text", text: "B" }] },
    ]);
  });

  it("reads assistant text parts, refusal parts, a refusal string, null content and empty text", () => {
    const request = read({
      model: "gpt-4o",
      messages: [
        { role: "user", content: "Hi" },
        { role: "assistant", content: [{ type: "text", text: "Part one. " }, { type: "refusal", refusal: "I can't." }], refusal: "No." },
        { role: "user", content: "Call it" },
        { role: "assistant", content: "", tool_calls: [{ id: "call_9", type: "function", function: { name: "f", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "call_9", content: "done" },
        { role: "assistant", content: null },
      ],
    });
    expect(request.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Hi" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Part one. " },
          { type: "text", text: "I can't." },
          { type: "text", text: "No." },
        ],
      },
      { role: "user", content: [{ type: "text", text: "Call it" }] },
      { role: "assistant", content: [{ type: "tool_call", id: "call_9", name: "f", arguments: "{}" }] },
      { role: "user", content: [{ type: "tool_result", callId: "call_9", content: "done", isError: false }] },
      { role: "assistant", content: [{ type: "text", text: "" }] },
    ]);
  });

  it("reads a very long conversation without overflowing the stack", () => {
    const parts = Array.from({ length: 200_000 }, () => ({ type: "text", text: "x" }));
    const request = read({ model: "gpt-4o", messages: [{ role: "system", content: parts }, { role: "user", content: parts }, { role: "user", content: parts }] });
    expect(request.system).toHaveLength(200_000);
    expect(request.messages[0]!.content).toHaveLength(400_000);
    expect(JSON.stringify(chatFormat.writeRequest(request, 1)).length).toBeGreaterThan(400_000);
  });

  it("takes max_tokens when max_completion_tokens is absent", () => {
    expect(read({ model: "gpt-4o", messages: hi, max_tokens: 64 }).maxOutputTokens).toBe(64);
  });

  it("reads a single stop string as a list", () => {
    expect(read({ model: "gpt-4o", messages: hi, stop: "END" }).stopSequences).toEqual(["END"]);
  });

  it.each([
    ["none", { type: "none" }],
    ["auto", { type: "auto" }],
    ["required", { type: "required" }],
    [{ type: "function", function: { name: "get_weather" } }, { type: "tool", name: "get_weather" }],
  ])("reads tool_choice %j", (choice, expected) => {
    expect(read({ model: "gpt-4o", messages: hi, tool_choice: choice }).toolChoice).toEqual(expected);
  });

  it.each([
    [{ type: "text" }, null],
    [{ type: "json_object" }, { type: "json_object" }],
    [
      { type: "json_schema", json_schema: { name: "s", schema: { type: "object" } } },
      { type: "json_schema", name: "s", schema: { type: "object" }, strict: null, description: null },
    ],
  ])("reads response_format %j", (format, expected) => {
    expect(read({ model: "gpt-4o", messages: hi, response_format: format }).responseFormat).toEqual(expected);
  });

  it("takes safety_identifier as the user when there is no user", () => {
    expect(read({ model: "gpt-4o", messages: hi, safety_identifier: "s-1" }).user).toBe("s-1");
  });

  it("reads stream_options.include_usage false, and no stream_options, as no usage", () => {
    expect(read({ model: "gpt-4o", messages: hi, stream: true, stream_options: { include_usage: false } }).streamUsage).toBe(false);
    expect(read({ model: "gpt-4o", messages: hi, stream: true }).streamUsage).toBe(false);
  });

  it.each([
    [{ logprobs: true }, "the chat completions field 'logprobs' cannot be carried to the provider's format."],
    [{ top_logprobs: 2 }, "the chat completions field 'top_logprobs' cannot be carried to the provider's format."],
    [{ logit_bias: { "50256": -100 } }, "the chat completions field 'logit_bias' cannot be carried to the provider's format."],
    [{ seed: 7 }, "the chat completions field 'seed' cannot be carried to the provider's format."],
    [{ frequency_penalty: 0.5 }, "the chat completions field 'frequency_penalty' cannot be carried to the provider's format."],
    [{ presence_penalty: -0.5 }, "the chat completions field 'presence_penalty' cannot be carried to the provider's format."],
    [{ audio: { voice: "alloy", format: "mp3" } }, "the chat completions field 'audio' cannot be carried to the provider's format."],
    [{ modalities: ["text", "audio"] }, "the chat completions field 'modalities' cannot be carried to the provider's format."],
    [{ prediction: { type: "content", content: "x" } }, "the chat completions field 'prediction' cannot be carried to the provider's format."],
    [{ web_search_options: {} }, "the chat completions field 'web_search_options' cannot be carried to the provider's format."],
    [{ functions: [{ name: "f" }] }, "the chat completions field 'functions' cannot be carried to the provider's format."],
    [{ function_call: "auto" }, "the chat completions field 'function_call' cannot be carried to the provider's format."],
    [{ verbosity: "low" }, "the chat completions field 'verbosity' cannot be carried to the provider's format."],
    [{ stream_options: { include_usage: true, chunk_size: 4 } }, "the chat completions field 'stream_options.chunk_size' cannot be carried to the provider's format."],
    [{ moderation: { model: "omni-moderation-latest" } }, "the field 'moderation' is not a chat completions field the gateway can translate."],
    [{ best_of: 2 }, "the field 'best_of' is not a chat completions field the gateway can translate."],
    [{ n: 2 }, "'n' above 1 asks for several answers, which only chat completions can give."],
    [{ reasoning_effort: "xhigh" }, "the reasoning effort 'xhigh' has no equivalent in the provider's format."],
    [{ tools: [{ type: "custom", custom: { name: "grammar" } }] }, "the tool type 'custom' has no equivalent in the provider's format."],
    [
      { tool_choice: { type: "allowed_tools", allowed_tools: { mode: "auto", tools: [] } } },
      "the tool_choice of type 'allowed_tools' has no equivalent in the provider's format.",
    ],
    [{ tool_choice: { type: "custom", custom: { name: "grammar" } } }, "the tool_choice of type 'custom' has no equivalent in the provider's format."],
    [
      { messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] }] },
      "a user message part of type 'input_audio' has no equivalent in the provider's format.",
    ],
    [
      { messages: [{ role: "user", content: [{ type: "file", file: { file_id: "file-1" } }] }] },
      "a user message part of type 'file' has no equivalent in the provider's format.",
    ],
    [
      { messages: [...hi, { role: "assistant", content: null, audio: { id: "audio_1" } }] },
      "an assistant message's 'audio' (a reference to earlier audio output) has no equivalent in the provider's format.",
    ],
    [
      { messages: [...hi, { role: "assistant", content: null, function_call: { name: "f", arguments: "{}" } }] },
      "an assistant message's legacy 'function_call' has no equivalent in the provider's format; use 'tool_calls'.",
    ],
    [
      { messages: [...hi, { role: "assistant", tool_calls: [{ id: "c", type: "custom", custom: { name: "g", input: "x" } }] }] },
      "an assistant tool call of type 'custom' has no equivalent in the provider's format.",
    ],
    [
      { messages: [...hi, { role: "function", name: "f", content: "42" }] },
      "a message with role 'function' (legacy function calling) has no equivalent in the provider's format; use 'tool' messages.",
    ],
    [
      { messages: [{ role: "user", name: "alice", content: "Hi" }] },
      "the chat completions message field 'name' has no equivalent in the provider's format.",
    ],
  ])("refuses %j", (fields, detail) => {
    expect(gatewayError(() => read({ model: "gpt-4o", messages: hi, ...fields }))).toEqual({ status: 400, message: PREFIX + detail });
  });

  it.each([
    [{ messages: "Hi" }, "'messages' must be an array."],
    [{ messages: [null] }, "'messages[0]' must be an object."],
    [{ messages: [{ content: "Hi" }] }, "'messages[0].role' must be a string."],
    [{ messages: [{ role: "robot", content: "Hi" }] }, "'messages[0].role' must be 'system', 'developer', 'user', 'assistant' or 'tool'."],
    [{ messages: [{ role: "user", content: 42 }] }, "'messages[0].content' must be a string or an array of content parts."],
    [{ messages: [{ role: "user", content: [] }] }, "'messages[0].content' must not be an empty array."],
    [{ messages: [{ role: "user", content: [{ type: "text" }] }] }, "'messages[0].content[0].text' must be a string."],
    [{ messages: [{ role: "user", content: [{ text: "x" }] }] }, "'messages[0].content[0].type' must be a string."],
    [{ messages: [{ role: "user", content: [{ type: "image_url", image_url: "https://x" }] }] }, "'messages[0].content[0].image_url' must be an object."],
    [
      { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x", detail: "huge" } }] }] },
      "'messages[0].content[0].image_url.detail' must be 'auto', 'low', 'high' or 'original'.",
    ],
    [{ messages: [{ role: "system", content: [{ type: "image_url" }] }] }, "'messages[0].content[0].type' must be 'text'."],
    [{ messages: [{ role: "system", content: null }] }, "'messages[0].content' must be a string or an array of text parts."],
    [{ messages: [{ role: "tool", content: "x" }] }, "'messages[0].tool_call_id' must be a string."],
    [{ messages: [{ role: "assistant", content: 3 }] }, "'messages[0].content' must be a string, null or an array of text or refusal parts."],
    [{ messages: [{ role: "assistant", content: [{ type: "image_url" }] }] }, "'messages[0].content[0].type' must be 'text' or 'refusal'."],
    [{ messages: [{ role: "assistant", tool_calls: {} }] }, "'messages[0].tool_calls' must be an array."],
    [
      { messages: [{ role: "assistant", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: {} } }] }] },
      "'messages[0].tool_calls[0].function.arguments' must be a string.",
    ],
    [{ model: 5 }, "'model' must be a string."],
    [{ temperature: "hot" }, "'temperature' must be a number."],
    [{ top_p: "1" }, "'top_p' must be a number."],
    [{ max_completion_tokens: 0 }, "'max_completion_tokens' must be a positive integer."],
    [{ max_tokens: 1.5 }, "'max_tokens' must be a positive integer."],
    [{ stop: [1] }, "'stop' must be a string or an array of strings."],
    [{ n: "1" }, "'n' must be an integer."],
    [{ stream: "yes" }, "'stream' must be a boolean."],
    [{ stream_options: [] }, "'stream_options' must be an object."],
    [{ stream_options: { include_usage: "yes" } }, "'stream_options.include_usage' must be a boolean."],
    [{ parallel_tool_calls: 1 }, "'parallel_tool_calls' must be a boolean."],
    [{ response_format: { type: "yaml" } }, "'response_format.type' must be 'text', 'json_object' or 'json_schema'."],
    [{ response_format: { type: "json_schema", json_schema: { name: "s" } } }, "'response_format.json_schema.schema' must be an object."],
    [{ reasoning_effort: 3 }, "'reasoning_effort' must be a string."],
    [{ user: 3 }, "'user' must be a string."],
    [{ tools: {} }, "'tools' must be an array."],
    [{ tools: [{ type: "function" }] }, "'tools[0].function' must be an object."],
    [{ tools: [{ type: "function", function: { name: "f", parameters: "{}" } }] }, "'tools[0].function.parameters' must be an object."],
    [{ tools: [{ function: { name: "f" } }] }, "'tools[0].type' must be a string."],
    [{ tool_choice: "any" }, "'tool_choice' must be 'none', 'auto', 'required' or an object."],
    [{ tool_choice: { type: "function" } }, "'tool_choice.function' must be an object."],
  ])("rejects the malformed %j", (fields, message) => {
    expect(gatewayError(() => read({ model: "gpt-4o", messages: hi, ...fields }))).toEqual({ status: 400, message });
  });
});

describe("chat: writing requests", () => {
  const write = (request: CanonicalRequest) => JSON.stringify(chatFormat.writeRequest(request, 4096));

  it("writes every field a compatible server takes", () => {
    const request: CanonicalRequest = {
      model: "qwen2.5",
      system: ["Be brief.", "Use metric units."],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Weather in Paris?" },
            { type: "image", source: { kind: "base64", mediaType: "image/png", data: "AAAA" } },
            { type: "image", source: { kind: "url", url: "https://example.com/a.png" } },
          ],
        },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Let me " },
            { type: "text", text: "check." },
            { type: "tool_call", id: "toolu_1", name: "get_weather", arguments: '{"city":"Paris"}' },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", callId: "toolu_1", content: [{ type: "text", text: "18" }, { type: "text", text: "sunny" }], isError: true },
            { type: "text", text: "Thanks" },
          ],
        },
      ],
      tools: [
        {
          name: "get_weather",
          description: "Current weather",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          strict: true,
        },
        { name: "noop", description: null, parameters: { type: "object", properties: {} }, strict: null },
      ],
      toolChoice: { type: "tool", name: "get_weather" },
      maxOutputTokens: 256,
      temperature: 0.5,
      topP: 1,
      topK: null,
      stopSequences: ["STOP"],
      stream: true,
      streamUsage: false,
      parallelToolCalls: true,
      responseFormat: { type: "json_schema", name: "w", schema: { type: "object" }, strict: true, description: "d" },
      reasoningEffort: "medium",
      user: "u1",
    };
    expect(write(request)).toBe(
      String.raw`{"model":"qwen2.5","messages":[{"role":"system","content":"Be brief.\n\nUse metric units."},{"role":"user","content":[{"type":"text","text":"Weather in Paris?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]},{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"toolu_1","content":"18\n\nsunny"},{"role":"user","content":"Thanks"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}},{"type":"function","function":{"name":"noop","parameters":{"type":"object","properties":{}}}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"max_tokens":256,"temperature":0.5,"top_p":1,"stop":["STOP"],"stream":true,"stream_options":{"include_usage":true},"parallel_tool_calls":true,"response_format":{"type":"json_schema","json_schema":{"name":"w","description":"d","schema":{"type":"object"},"strict":true}},"reasoning_effort":"medium","user":"u1"}`,
    );
  });

  it("writes a plain request with nothing optional, not streamed", () => {
    expect(write(plain)).toBe(`{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}]}`);
  });

  it("writes tool results as tool messages and the other parts as one user message, in the parts' order", () => {
    const request: CanonicalRequest = {
      ...plain,
      messages: [
        { role: "assistant", content: [{ type: "tool_call", id: "a", name: "f", arguments: "{}" }, { type: "tool_call", id: "b", name: "f", arguments: "{}" }] },
        {
          role: "user",
          content: [
            { type: "tool_result", callId: "a", content: "one", isError: false },
            { type: "tool_result", callId: "b", content: [], isError: false },
            { type: "text", text: "Look:" },
            { type: "image", source: { kind: "url", url: "https://x/y.png" } },
          ],
        },
      ],
      toolChoice: { type: "auto" },
      responseFormat: { type: "json_object" },
    };
    expect(write(request)).toBe(
      `{"model":"gpt-4o","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"one"},{"role":"tool","tool_call_id":"b","content":""},{"role":"user","content":[{"type":"text","text":"Look:"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}],"tool_choice":"auto","response_format":{"type":"json_object"}}`,
    );
  });

  it.each([
    [{ type: "none" }, `"none"`],
    [{ type: "required" }, `"required"`],
  ] as const)("writes tool_choice %j", (toolChoice, expected) => {
    expect(JSON.stringify(chatFormat.writeRequest({ ...plain, toolChoice }, 4096).tool_choice)).toBe(expected);
  });

  it("refuses a tool result with images", () => {
    const request: CanonicalRequest = {
      ...plain,
      messages: [
        { role: "assistant", content: [{ type: "tool_call", id: "a", name: "f", arguments: "{}" }] },
        {
          role: "user",
          content: [{ type: "tool_result", callId: "a", content: [{ type: "image", source: { kind: "url", url: "https://x/y.png" } }], isError: false }],
        },
      ],
    };
    expect(gatewayError(() => chatFormat.writeRequest(request, 4096))).toEqual({
      status: 400,
      message: `${PREFIX}a tool result with images cannot be sent as a chat completions tool message.`,
    });
  });

  it("refuses top_k", () => {
    expect(gatewayError(() => chatFormat.writeRequest({ ...plain, topK: 40 }, 4096))).toEqual({
      status: 400,
      message: `${PREFIX}'top_k' has no equivalent in chat completions.`,
    });
  });

  it("refuses an image in an assistant message", () => {
    const request: CanonicalRequest = { ...plain, messages: [{ role: "assistant", content: [{ type: "image", source: { kind: "url", url: "https://x" } }] }] };
    expect(gatewayError(() => chatFormat.writeRequest(request, 4096))).toEqual({
      status: 400,
      message: `${PREFIX}an assistant message with an image cannot be sent to chat completions.`,
    });
  });

  it("reads back what it writes", () => {
    const request: CanonicalRequest = {
      ...plain,
      system: ["Be brief."],
      messages: [
        { role: "user", content: [{ type: "text", text: "Hi" }, { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "/9j/" } }] },
        { role: "assistant", content: [{ type: "text", text: "Calling." }, { type: "tool_call", id: "c1", name: "f", arguments: '{"x":1}' }] },
        { role: "user", content: [{ type: "tool_result", callId: "c1", content: "ok", isError: false }] },
      ],
      stream: true,
      streamUsage: true,
    };
    expect(chatFormat.readRequest(chatFormat.writeRequest(request, 4096))).toEqual(request);
  });
});

const usage = { inputTokens: 120, outputTokens: 40, cachedInputTokens: 100, cacheWriteInputTokens: 0, reasoningTokens: 16 };
const chatUsage = {
  prompt_tokens: 120,
  completion_tokens: 40,
  total_tokens: 160,
  prompt_tokens_details: { cached_tokens: 100, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 16, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};

/** A ChatCompletion as OpenAI writes it. */
function completion(message: Record<string, unknown>, finishReason: string | null, extra: Record<string, unknown> = {}) {
  return {
    id: "chatcmpl-abc",
    object: "chat.completion",
    created: 1_700_000_000,
    model: "gpt-4o-2024-08-06",
    choices: [{ index: 0, message: { role: "assistant", refusal: null, annotations: [], ...message }, logprobs: null, finish_reason: finishReason }],
    usage: chatUsage,
    service_tier: "default",
    system_fingerprint: "fp_1",
    ...extra,
  };
}

describe("chat: reading answers", () => {
  it("reads a text answer with cached and reasoning tokens", () => {
    expect(chatFormat.readAnswer(completion({ content: "Hello there." }, "stop"), 5)).toEqual({
      id: "chatcmpl-abc",
      model: "gpt-4o-2024-08-06",
      created: 1_700_000_000,
      content: [{ type: "text", text: "Hello there." }],
      stopReason: "end",
      stopSequence: null,
      usage,
    } satisfies CanonicalAnswer);
  });

  it("reads tool calls after the text", () => {
    const answer = chatFormat.readAnswer(
      completion(
        {
          content: "Checking.",
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
            { id: "call_2", type: "function", function: { name: "get_time", arguments: "{}" } },
          ],
        },
        "tool_calls",
      ),
      5,
    );
    expect(answer.content).toEqual([
      { type: "text", text: "Checking." },
      { type: "tool_call", id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
      { type: "tool_call", id: "call_2", name: "get_time", arguments: "{}" },
    ]);
    expect(answer.stopReason).toBe("tool_use");
  });

  it("reads a refusal as text", () => {
    const answer = chatFormat.readAnswer(completion({ content: null, refusal: "I can't help with that." }, "stop"), 5);
    expect(answer.content).toEqual([{ type: "text", text: "I can't help with that." }]);
  });

  it.each([
    ["stop", "end"],
    ["length", "max_tokens"],
    ["tool_calls", "tool_use"],
    ["function_call", "tool_use"],
    ["content_filter", "content_filter"],
    [null, "end"],
  ])("reads finish_reason %j as %s", (finishReason, stopReason) => {
    expect(chatFormat.readAnswer(completion({ content: "x" }, finishReason), 5).stopReason).toBe(stopReason);
  });

  it("reads a compatible server's bare answer: no usage, no created, no details", () => {
    const body = { id: "cmpl-1", model: "llama3", choices: [{ index: 0, message: { role: "assistant", content: "" }, finish_reason: "stop" }] };
    expect(chatFormat.readAnswer(body, 1_234)).toEqual({
      id: "cmpl-1",
      model: "llama3",
      created: 1_234,
      content: [],
      stopReason: "end",
      stopSequence: null,
      usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, cacheWriteInputTokens: 0, reasoningTokens: 0 },
    });
    const withUsage = { ...body, usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10, prompt_tokens_details: null } };
    expect(chatFormat.readAnswer(withUsage, 1_234).usage).toEqual({ inputTokens: 7, outputTokens: 3, cachedInputTokens: 0, cacheWriteInputTokens: 0, reasoningTokens: 0 });
  });

  it.each([
    ["not an object", [], "the answer is not a JSON object."],
    ["no choices", completion({ content: "x" }, "stop", { choices: [] }), "the answer has no choices."],
    ["no id", completion({ content: "x" }, "stop", { id: null }), "the answer has no string 'id' or 'model'."],
    ["no message", completion({ content: "x" }, "stop", { choices: [{ index: 0, finish_reason: "stop" }] }), "the answer's first choice has no message."],
    ["an unknown finish reason", completion({ content: "x" }, "abort"), `the finish reason "abort" is not one of chat completions'.`],
    ["content not a string", completion({ content: 5 }, "stop"), "the message's 'content' is not a string."],
    ["a broken tool call", completion({ content: null, tool_calls: [{ id: "c", type: "function", function: { name: "f" } }] }, "tool_calls"), "a tool call has no string 'id', 'function.name' or 'function.arguments'."],
    ["usage without counts", completion({ content: "x" }, "stop", { usage: { total_tokens: 3 } }), "the usage has no 'prompt_tokens' or 'completion_tokens' count."],
  ])("refuses an answer with %s", (_name, body, detail) => {
    expect(gatewayError(() => chatFormat.readAnswer(body, 5))).toEqual({ status: 502, message: UNREADABLE + detail });
  });
});

const textAnswer: CanonicalAnswer = {
  id: "msg_01",
  model: "claude-sonnet-4-5",
  created: 1_700_000_000,
  content: [{ type: "text", text: "Hello " }, { type: "text", text: "there." }],
  stopReason: "end",
  stopSequence: null,
  usage,
};

describe("chat: writing answers", () => {
  it("writes a text answer", () => {
    expect(JSON.stringify(chatFormat.writeAnswer(textAnswer))).toBe(
      `{"id":"msg_01","object":"chat.completion","created":1700000000,"model":"claude-sonnet-4-5","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":40,"total_tokens":160,"prompt_tokens_details":{"cached_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":16,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
    );
  });

  it("writes tool calls, and null content when there is no text", () => {
    const answer: CanonicalAnswer = {
      ...textAnswer,
      content: [{ type: "tool_call", id: "toolu_1", name: "get_weather", arguments: '{"city":"Paris"}' }],
      stopReason: "tool_use",
      usage: { inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, cacheWriteInputTokens: 4, reasoningTokens: 0 },
    };
    expect(JSON.stringify(chatFormat.writeAnswer(answer))).toBe(
      String.raw`{"id":"msg_01","object":"chat.completion","created":1700000000,"model":"claude-sonnet-4-5","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
    );
  });

  it.each([
    ["end", "stop"],
    ["stop_sequence", "stop"],
    ["max_tokens", "length"],
    ["tool_use", "tool_calls"],
    ["content_filter", "content_filter"],
  ] as const)("writes stop reason %s as %s", (stopReason, finishReason) => {
    const written = chatFormat.writeAnswer({ ...textAnswer, stopReason, stopSequence: stopReason === "stop_sequence" ? "END" : null });
    expect((written.choices as Array<{ finish_reason: string }>)[0]!.finish_reason).toBe(finishReason);
  });

  it("is what the OpenAI SDK returns from chat.completions.create", async () => {
    const body = JSON.stringify(chatFormat.writeAnswer(textAnswer));
    const client = sdkClient(() => new Response(body, { headers: { "content-type": "application/json" } }));
    const result = await client.chat.completions.create({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "Hi" }] });
    expect(result.choices[0]!.message.content).toBe("Hello there.");
    expect(result.choices[0]!.finish_reason).toBe("stop");
    expect(result.usage?.prompt_tokens_details?.cached_tokens).toBe(100);
  });
});

/** Splits SSE text into the gateway's events and reads them all. */
function readStream(text: string, now = 99): StreamEvent[] {
  const reader = chatFormat.streamReader(now);
  const splitter = new SseSplitter();
  const events = splitter.push(Buffer.from(text)).flatMap((event) => reader.read(event));
  return [...events, ...reader.end()];
}

const chunkHead = `{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_1","choices":`;
/** A chunk of OpenAI's stream carrying one choice with `delta` and `finish` (raw JSON text). */
const chunk = (delta: string, finish = "null") => `data: ${chunkHead}[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}],"usage":null}\n\n`;

/** What OpenAI streams for a text, then two tool calls, with include_usage. */
const openaiStream = [
  chunk(`{"role":"assistant","content":"","refusal":null}`),
  chunk(`{"content":"Let me"}`),
  chunk(`{"content":" check."}`),
  chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}`),
  chunk(String.raw`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`),
  chunk(String.raw`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`),
  chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]}`),
  chunk(`{}`, `"tool_calls"`),
  `data: ${chunkHead}[],"usage":{"prompt_tokens":120,"completion_tokens":40,"total_tokens":160,"prompt_tokens_details":{"cached_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":16,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}\n\n`,
  "data: [DONE]\n\n",
].join("");

describe("chat: reading streams", () => {
  it("reads OpenAI's stream of text and tool calls", () => {
    expect(readStream(openaiStream)).toEqual([
      { type: "start", id: "chatcmpl-7", model: "gpt-4o-2024-08-06", created: 1_700_000_000, usage: null },
      { type: "block_start", index: 0, block: { type: "text" } },
      { type: "text_delta", index: 0, text: "Let me" },
      { type: "text_delta", index: 0, text: " check." },
      { type: "block_stop", index: 0 },
      { type: "block_start", index: 1, block: { type: "tool_call", id: "call_a", name: "get_weather" } },
      { type: "arguments_delta", index: 1, json: '{"city":' },
      { type: "arguments_delta", index: 1, json: '"Paris"}' },
      { type: "block_stop", index: 1 },
      { type: "block_start", index: 2, block: { type: "tool_call", id: "call_b", name: "get_time" } },
      { type: "arguments_delta", index: 2, json: "{}" },
      { type: "block_stop", index: 2 },
      { type: "stop", stopReason: "tool_use", stopSequence: null, usage },
    ] satisfies StreamEvent[]);
  });

  it("reads a refusal as text, a compatible server's stream without usage, and a repeated tool call id", () => {
    const text = [
      ": keep-alive\n\n",
      `data: {"id":"c1","object":"chat.completion.chunk","model":"llama3","choices":[{"index":0,"delta":{"role":"assistant","refusal":"No"}}]}\n\n`,
      `data: {"id":"c1","object":"chat.completion.chunk","model":"llama3","choices":[{"index":0,"delta":{"refusal":"pe."}}]}\n\n`,
      `data: {"id":"c1","object":"chat.completion.chunk","model":"llama3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t1","function":{"name":"f","arguments":"{"}}]}}]}\n\n`,
      `data: {"id":"c1","object":"chat.completion.chunk","model":"llama3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t1","function":{"arguments":"}"}}]}}]}\n\n`,
      `data: {"id":"c1","object":"chat.completion.chunk","model":"llama3","choices":[{"index":0,"delta":{"content":""},"finish_reason":"length"}]}\n\n`,
      "data: [DONE]\n\n",
    ].join("");
    expect(readStream(text, 42)).toEqual([
      { type: "start", id: "c1", model: "llama3", created: 42, usage: null },
      { type: "block_start", index: 0, block: { type: "text" } },
      { type: "text_delta", index: 0, text: "No" },
      { type: "text_delta", index: 0, text: "pe." },
      { type: "block_stop", index: 0 },
      { type: "block_start", index: 1, block: { type: "tool_call", id: "t1", name: "f" } },
      { type: "arguments_delta", index: 1, json: "{" },
      { type: "arguments_delta", index: 1, json: "}" },
      { type: "block_stop", index: 1 },
      { type: "stop", stopReason: "max_tokens", stopSequence: null, usage: null },
    ] satisfies StreamEvent[]);
  });

  it("emits events as the chunks arrive", () => {
    const reader = chatFormat.streamReader(0);
    const events = new SseSplitter().push(Buffer.from(openaiStream));
    expect(reader.read(events[0]!)).toEqual([{ type: "start", id: "chatcmpl-7", model: "gpt-4o-2024-08-06", created: 1_700_000_000, usage: null }]);
    expect(reader.read(events[1]!)).toEqual([
      { type: "block_start", index: 0, block: { type: "text" } },
      { type: "text_delta", index: 0, text: "Let me" },
    ]);
  });

  it("throws the provider's in-stream error as a 502 with its message", () => {
    const text = chunk(`{"role":"assistant","content":"Hi"}`) + `data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}\n\n`;
    expect(gatewayError(() => readStream(text))).toEqual({ status: 502, message: "The server had an error while processing your request." });
  });

  it("gives the stop when the stream ends after its finish reason but before [DONE]", () => {
    const text = chunk(`{"content":"Hi"}`) + chunk(`{}`, `"stop"`);
    expect(readStream(text).at(-1)).toEqual({ type: "stop", stopReason: "end", stopSequence: null, usage: null });
  });

  it("throws when the stream ends before its finish reason", () => {
    const err = thrown(() => readStream(chunk(`{"content":"Hi"}`)));
    expect(err).toBeInstanceOf(UpstreamConnectionError);
    expect(err).toMatchObject({ code: "ERR_STREAM_INCOMPLETE", phase: "body" });
  });

  it.each([
    ["[DONE] without a finish reason", chunk(`{"content":"Hi"}`) + "data: [DONE]\n\n", "the stream ended without a finish reason."],
    ["a chunk that is not JSON", "data: {nope\n\n", "a stream chunk is not a JSON object."],
    ["a first chunk without a model", `data: {"id":"c1","choices":[]}\n\n`, "the stream's first chunk has no string 'id' or 'model'."],
    [
      "arguments for a call that is not open",
      chunk(`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":""}}]}`) + chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}`),
      "a tool call's arguments came for a call that is not the one being written.",
    ],
    ["arguments before any call", chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}`), "a tool call's arguments came for a call that is not the one being written."],
    ["an unknown finish reason", chunk(`{}`, `"abort"`), `the finish reason "abort" is not one of chat completions'.`],
  ])("refuses %s", (_name, text, detail) => {
    expect(gatewayError(() => readStream(text))).toEqual({ status: 502, message: UNREADABLE + detail });
  });
});

const streamEvents: StreamEvent[] = [
  { type: "start", id: "msg_01", model: "claude-sonnet-4-5", created: 1_700_000_000, usage: null },
  { type: "block_start", index: 0, block: { type: "text" } },
  { type: "text_delta", index: 0, text: "Let me" },
  { type: "text_delta", index: 0, text: " check." },
  { type: "block_stop", index: 0 },
  { type: "block_start", index: 1, block: { type: "tool_call", id: "toolu_a", name: "get_weather" } },
  { type: "arguments_delta", index: 1, json: '{"city":' },
  { type: "arguments_delta", index: 1, json: '"Paris"}' },
  { type: "block_stop", index: 1 },
  { type: "block_start", index: 2, block: { type: "tool_call", id: "toolu_b", name: "get_time" } },
  { type: "arguments_delta", index: 2, json: "{}" },
  { type: "block_stop", index: 2 },
  { type: "stop", stopReason: "tool_use", stopSequence: null, usage },
];

const writeStream = (streamUsage: boolean, events: StreamEvent[] = streamEvents) => {
  const writer = chatFormat.streamWriter({ streamUsage });
  return events.map((event) => writer.write(event));
};

const head = `data: {"id":"msg_01","object":"chat.completion.chunk","created":1700000000,"model":"claude-sonnet-4-5","choices":`;

describe("chat: writing streams", () => {
  it("writes each event as it comes, with the usage chunk when asked", () => {
    expect(writeStream(true)).toEqual([
      `${head}[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`,
      "",
      `${head}[{"index":0,"delta":{"content":"Let me"},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`,
      `${head}[{"index":0,"delta":{"content":" check."},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`,
      "",
      `${head}[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"toolu_a","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`,
      String.raw`${head}[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
      String.raw`${head}[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
      "",
      `${head}[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"toolu_b","type":"function","function":{"name":"get_time","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`,
      `${head}[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`,
      "",
      `${head}[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}\n\n` +
        `${head}[],"usage":{"prompt_tokens":120,"completion_tokens":40,"total_tokens":160,"prompt_tokens_details":{"cached_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":16,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}\n\n` +
        "data: [DONE]\n\n",
    ]);
  });

  it("writes no usage when the caller did not ask for it", () => {
    const events: StreamEvent[] = [
      { type: "start", id: "msg_01", model: "claude-sonnet-4-5", created: 1_700_000_000, usage: null },
      { type: "block_start", index: 0, block: { type: "text" } },
      { type: "text_delta", index: 0, text: "Hi" },
      { type: "block_stop", index: 0 },
      { type: "stop", stopReason: "max_tokens", stopSequence: null, usage },
    ];
    expect(writeStream(false, events).join("")).toBe(
      `${head}[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}\n\n` +
        `${head}[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}\n\n` +
        `${head}[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}\n\n` +
        "data: [DONE]\n\n",
    );
  });

  it("writes zero usage when the provider reported none", () => {
    const written = writeStream(true, [streamEvents[0]!, { type: "stop", stopReason: "end", stopSequence: null, usage: null }]);
    expect(written[1]).toBe(
      `${head}[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}\n\n` +
        `${head}[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}\n\n` +
        "data: [DONE]\n\n",
    );
  });

  it("writes the start's usage when the stop has none", () => {
    const written = writeStream(true, [{ type: "start", id: "msg_01", model: "claude-sonnet-4-5", created: 1_700_000_000, usage }, { type: "stop", stopReason: "end", stopSequence: null, usage: null }]);
    expect(written[1]).toContain(`"usage":{"prompt_tokens":120,"completion_tokens":40,`);
  });

  it("writes its error event, the same as chatStreamError", () => {
    const expected = `data: {"error":{"message":"The provider closed the connection before its response was complete.","type":"api_error","param":null,"code":null}}\n\n`;
    expect(chatFormat.streamWriter({ streamUsage: true }).error("The provider closed the connection before its response was complete.")).toBe(expected);
    expect(chatStreamError("The provider closed the connection before its response was complete.")).toBe(expected);
  });

  it("reads back what it writes", () => {
    expect(readStream(writeStream(true).join(""))).toEqual(streamEvents);
  });
});

/** An OpenAI client whose every call is answered by `respond`. */
function sdkClient(respond: () => Response): OpenAI {
  return new OpenAI({ apiKey: "test", baseURL: "http://gateway.test/v1", maxRetries: 0, fetch: async () => respond() });
}

const sseResponse = (text: string) => () => new Response(text, { headers: { "content-type": "text/event-stream" } });

describe("chat: the OpenAI SDK reads the written stream", () => {
  it("assembles the text and the tool calls with finalChatCompletion", async () => {
    const client = sdkClient(sseResponse(writeStream(true).join("")));
    const stream = client.chat.completions.stream({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "Weather?" }], stream_options: { include_usage: true } });
    const final = await stream.finalChatCompletion();
    expect(final.id).toBe("msg_01");
    expect(final.model).toBe("claude-sonnet-4-5");
    expect(final.choices).toHaveLength(1);
    const choice = final.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBe("Let me check.");
    expect(choice.message.tool_calls?.map((call) => (call.type === "function" ? [call.id, call.function.name, call.function.arguments] : null))).toEqual([
      ["toolu_a", "get_weather", '{"city":"Paris"}'],
      ["toolu_b", "get_time", "{}"],
    ]);
    expect(final.usage).toMatchObject({ prompt_tokens: 120, completion_tokens: 40, total_tokens: 160 });
  });

  it("assembles a text-only stream without usage", async () => {
    const events: StreamEvent[] = [
      streamEvents[0]!,
      { type: "block_start", index: 0, block: { type: "text" } },
      { type: "text_delta", index: 0, text: "Bonjour" },
      { type: "text_delta", index: 0, text: " !" },
      { type: "block_stop", index: 0 },
      { type: "stop", stopReason: "end", stopSequence: null, usage: null },
    ];
    const client = sdkClient(sseResponse(writeStream(false, events).join("")));
    const final = await client.chat.completions.stream({ model: "m", messages: [{ role: "user", content: "Hi" }] }).finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe("Bonjour !");
    expect(final.choices[0]!.finish_reason).toBe("stop");
  });

  it("throws an APIError carrying the message of the writer's error event", async () => {
    const writer = chatFormat.streamWriter({ streamUsage: false });
    const text = writer.write(streamEvents[0]!) + writer.write({ type: "text_delta", index: 0, text: "Hi" }) + writer.error("The provider did not answer in time.");
    const client = sdkClient(sseResponse(text));
    const stream = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "Hi" }], stream: true });
    const err = await (async () => {
      try {
        for await (const _chunk of stream);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).message).toContain("The provider did not answer in time.");
  });
});
