import Anthropic, { APIError } from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { GatewayError } from "../src/gateway/dataplane/errors.ts";
import type { CanonicalAnswer, CanonicalRequest, StreamEvent } from "../src/gateway/formats/canonical.ts";
import { messagesFormat } from "../src/gateway/formats/messages.ts";
import { UpstreamConnectionError } from "../src/gateway/providers/errors.ts";
import { SseSplitter, type SseEvent } from "../src/gateway/providers/sse.ts";

const UNTRANSLATABLE = "This request cannot be translated for the provider it is routed to: ";
const UNREADABLE = "The provider's answer could not be read: ";

/** The GatewayError a call throws, as status and message. */
function errorOf(fn: () => unknown): { status: number; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return { status: err.status, message: err.message };
    throw err;
  }
  throw new Error("expected a GatewayError");
}

const refused = (detail: string) => ({ status: 400, message: UNTRANSLATABLE + detail });
const malformed = (message: string) => ({ status: 400, message });
const unreadable = (detail: string) => ({ status: 502, message: UNREADABLE + detail });

const read = (body: Record<string, unknown>) => messagesFormat.readRequest(body);
const base = { model: "claude-sonnet-4-5", max_tokens: 1024, messages: [{ role: "user", content: "Hi" }] };
const readWith = (extra: Record<string, unknown>) => read({ ...base, ...extra });
const readContent = (content: unknown[], role = "user") => read({ ...base, messages: [{ role, content }] });

function canonical(overrides: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    model: "claude-sonnet-4-5",
    system: [],
    messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
    tools: [],
    toolChoice: null,
    maxOutputTokens: 1024,
    temperature: null,
    topP: null,
    topK: null,
    stopSequences: [],
    stream: false,
    streamUsage: true,
    parallelToolCalls: null,
    responseFormat: null,
    reasoningEffort: null,
    user: null,
    ...overrides,
  };
}

const weatherSchema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

describe("messages format: reading requests", () => {
  it("reads a realistic request with every kind of content and every option", () => {
    const request = read({
      model: "claude-sonnet-4-5",
      max_tokens: 2048,
      system: [
        { type: "text", text: "You are a weather assistant.", cache_control: { type: "ephemeral" } },
        { type: "text", text: "Answer in one sentence." },
      ],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is in these pictures, and what is the weather in Paris?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
            { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
            { type: "image", source: { type: "url", url: "data:image/jpeg;base64,/9j/4AAQ" }, cache_control: { type: "ephemeral" } },
          ],
        },
        {
          role: "assistant",
          content: [
            { type: "text", text: "A cat, a chart and a photo. Let me check the weather." },
            { type: "tool_use", id: "toolu_01A", name: "get_weather", input: { city: "Paris" } },
            { type: "tool_use", id: "toolu_01B", name: "get_weather", input: { city: "Lyon" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_01A", content: "18°C, sunny" },
            {
              type: "tool_result",
              tool_use_id: "toolu_01B",
              content: [
                { type: "text", text: "radar:" },
                { type: "image", source: { type: "base64", media_type: "image/gif", data: "R0lGOD" } },
              ],
              is_error: false,
            },
          ],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01C", is_error: true, cache_control: { type: "ephemeral" } }] },
        { role: "user", content: "Thanks!" },
      ],
      tools: [
        { name: "get_weather", description: "The weather in a city.", input_schema: weatherSchema, cache_control: { type: "ephemeral" } },
        { type: "custom", name: "get_time", input_schema: { type: "object" }, strict: true },
      ],
      tool_choice: { type: "tool", name: "get_weather", disable_parallel_tool_use: true },
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ["\n\nHuman:", "END"],
      stream: true,
      metadata: { user_id: "user-42" },
      service_tier: "auto",
      thinking: { type: "disabled" },
    });
    expect(request).toEqual({
      model: "claude-sonnet-4-5",
      system: ["You are a weather assistant.", "Answer in one sentence."],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is in these pictures, and what is the weather in Paris?" },
            { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } },
            { type: "image", source: { kind: "url", url: "https://example.com/cat.jpg" } },
            { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "/9j/4AAQ" } },
          ],
        },
        {
          role: "assistant",
          content: [
            { type: "text", text: "A cat, a chart and a photo. Let me check the weather." },
            { type: "tool_call", id: "toolu_01A", name: "get_weather", arguments: '{"city":"Paris"}' },
            { type: "tool_call", id: "toolu_01B", name: "get_weather", arguments: '{"city":"Lyon"}' },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", callId: "toolu_01A", content: "18°C, sunny", isError: false },
            {
              type: "tool_result",
              callId: "toolu_01B",
              content: [
                { type: "text", text: "radar:" },
                { type: "image", source: { kind: "base64", mediaType: "image/gif", data: "R0lGOD" } },
              ],
              isError: false,
            },
            { type: "tool_result", callId: "toolu_01C", content: "", isError: true },
            { type: "text", text: "Thanks!" },
          ],
        },
      ],
      tools: [
        { name: "get_weather", description: "The weather in a city.", parameters: weatherSchema, strict: null },
        { name: "get_time", description: null, parameters: { type: "object" }, strict: true },
      ],
      toolChoice: { type: "tool", name: "get_weather" },
      maxOutputTokens: 2048,
      temperature: 0.5,
      topP: 0.9,
      topK: 40,
      stopSequences: ["\n\nHuman:", "END"],
      stream: true,
      streamUsage: true,
      parallelToolCalls: false,
      responseFormat: null,
      reasoningEffort: null,
      user: "user-42",
    } satisfies CanonicalRequest);
  });

  it("reads a minimal request: string system and contents, defaults for every option", () => {
    expect(read({ model: "claude-haiku-4-5", max_tokens: 16, system: "Be brief.", messages: [{ role: "user", content: "Hi" }] })).toEqual(
      canonical({ model: "claude-haiku-4-5", system: ["Be brief."], maxOutputTokens: 16 }),
    );
    // max_tokens is Anthropic's to require; canonical form takes its absence.
    expect(read({ model: "m", messages: [] })).toEqual(canonical({ model: "m", messages: [], maxOutputTokens: null }));
  });

  it("hoists system messages into the system prompt in order and merges the turns around them", () => {
    const request = read({
      ...base,
      system: "First.",
      messages: [
        { role: "user", content: "One" },
        { role: "system", content: [{ type: "text", text: "Second." }] },
        { role: "user", content: [{ type: "text", text: "Two" }] },
        { role: "assistant", content: "Three" },
        { role: "assistant", content: [{ type: "text", text: "Four" }] },
        { role: "system", content: "Third." },
      ],
    });
    expect(request.system).toEqual(["First.", "Second.", "Third."]);
    expect(request.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "One" }, { type: "text", text: "Two" }] },
      { role: "assistant", content: [{ type: "text", text: "Three" }, { type: "text", text: "Four" }] },
    ]);
  });

  it("reads every tool_choice", () => {
    const choice = (tool_choice: unknown) => {
      const request = readWith({ tool_choice });
      return { toolChoice: request.toolChoice, parallelToolCalls: request.parallelToolCalls };
    };
    expect(choice({ type: "auto" })).toEqual({ toolChoice: { type: "auto" }, parallelToolCalls: null });
    expect(choice({ type: "any" })).toEqual({ toolChoice: { type: "required" }, parallelToolCalls: null });
    expect(choice({ type: "none" })).toEqual({ toolChoice: { type: "none" }, parallelToolCalls: null });
    expect(choice({ type: "tool", name: "get_weather" })).toEqual({ toolChoice: { type: "tool", name: "get_weather" }, parallelToolCalls: null });
    expect(choice({ type: "auto", disable_parallel_tool_use: true })).toEqual({ toolChoice: { type: "auto" }, parallelToolCalls: false });
    expect(choice({ type: "any", disable_parallel_tool_use: false })).toEqual({ toolChoice: { type: "required" }, parallelToolCalls: null });
    expect(choice(null)).toEqual({ toolChoice: null, parallelToolCalls: null });
  });

  it("takes back an answer's own content blocks as the SDK returns them", () => {
    const request = readContent(
      [
        { type: "text", text: "Checking.", citations: null },
        { type: "tool_use", id: "toolu_9", name: "get_weather", input: {}, caller: { type: "direct" } },
      ],
      "assistant",
    );
    expect(request.messages).toEqual([
      { role: "assistant", content: [{ type: "text", text: "Checking." }, { type: "tool_call", id: "toolu_9", name: "get_weather", arguments: "{}" }] },
    ]);
  });

  it("takes null for absent fields", () => {
    expect(readWith({ system: null, tools: null, temperature: null, metadata: null, thinking: null, container: null, stop_sequences: null })).toEqual(canonical());
    expect(readWith({ metadata: { user_id: null } }).user).toBeNull();
  });

  it("refuses request fields that cannot be carried", () => {
    expect(errorOf(() => readWith({ thinking: { type: "enabled", budget_tokens: 2048 } }))).toEqual(
      refused("extended thinking ('thinking' of type 'enabled') cannot be carried to the provider's format."),
    );
    expect(errorOf(() => readWith({ thinking: { type: "adaptive" } }))).toEqual(
      refused("extended thinking ('thinking' of type 'adaptive') cannot be carried to the provider's format."),
    );
    for (const [field, value] of [
      ["container", "container_011"],
      ["mcp_servers", [{ type: "url", url: "https://mcp.example.com", name: "x" }]],
      ["context_management", { edits: [] }],
      ["output_config", { effort: "low" }],
      ["cache_control", { type: "ephemeral" }],
      ["inference_geo", "us"],
      ["frequency_penalty", 0.5],
    ] as const) {
      expect(errorOf(() => readWith({ [field]: value }))).toEqual(refused(`the messages API field '${field}' cannot be carried to the provider's format.`));
    }
    expect(errorOf(() => readWith({ max_tokens: 0 }))).toEqual(
      refused("'max_tokens' 0 only warms Anthropic's prompt cache, which the provider's format cannot do."),
    );
  });

  it("refuses built-in tools and tool fields that change the answer", () => {
    for (const type of ["web_search_20250305", "bash_20250124", "text_editor_20250728", "computer_20250124", "code_execution_20250825"]) {
      expect(errorOf(() => readWith({ tools: [{ type, name: "x" }] }))).toEqual(refused(`the tool type '${type}' is a built-in tool of Anthropic's messages API.`));
    }
    const tool = { name: "t", input_schema: { type: "object" } };
    expect(errorOf(() => readWith({ tools: [{ ...tool, defer_loading: true }] }))).toEqual(
      refused("the messages API field 'tools[0].defer_loading' cannot be carried to the provider's format."),
    );
    expect(errorOf(() => readWith({ tools: [{ ...tool, input_examples: [{ a: 1 }] }] }))).toEqual(
      refused("the messages API field 'tools[0].input_examples' cannot be carried to the provider's format."),
    );
    // These say nothing the answer depends on.
    expect(readWith({ tools: [{ ...tool, defer_loading: false, input_examples: [], eager_input_streaming: true, allowed_callers: ["direct"] }] }).tools).toEqual([
      { name: "t", description: null, parameters: { type: "object" }, strict: null },
    ]);
  });

  it("refuses content blocks that canonical form has no place for", () => {
    const blocks: Array<[string, string, Record<string, unknown>]> = [
      ["assistant", "thinking", { thinking: "Hmm.", signature: "sig" }],
      ["assistant", "redacted_thinking", { data: "abc" }],
      ["user", "document", { source: { type: "text", media_type: "text/plain", data: "doc" } }],
      ["user", "search_result", { source: "https://x", title: "x", content: [] }],
      ["assistant", "server_tool_use", { id: "srvtoolu_1", name: "web_search", input: {} }],
      ["assistant", "web_search_tool_result", { tool_use_id: "srvtoolu_1", content: [] }],
      ["user", "container_upload", { file_id: "file_1" }],
    ];
    for (const [role, type, fields] of blocks) {
      expect(errorOf(() => readContent([{ type, ...fields }], role))).toEqual(
        refused(`the content block type '${type}' of Anthropic's messages API has no equivalent in the provider's format.`),
      );
    }
    expect(errorOf(() => readContent([{ type: "tool_result", tool_use_id: "t", content: [{ type: "document", source: {} }] }]))).toEqual(
      refused("the content block type 'document' of Anthropic's messages API has no equivalent in the provider's format."),
    );
    expect(errorOf(() => readContent([{ type: "image", source: { type: "file", file_id: "file_1" } }]))).toEqual(
      refused("an image given by its Files API id cannot be carried to the provider's format."),
    );
    expect(errorOf(() => readContent([{ type: "text", text: "x", citations: [{ type: "char_location" }] }]))).toEqual(
      refused("the messages API field 'messages[0].content[0].citations' cannot be carried to the provider's format."),
    );
    expect(errorOf(() => readContent([{ type: "tool_use", id: "t", name: "n", input: {}, caller: { type: "code_execution_20250825", tool_id: "x" } }], "assistant"))).toEqual(
      refused("the messages API field 'messages[0].content[0].caller' cannot be carried to the provider's format."),
    );
    expect(errorOf(() => readContent([{ type: "text", text: "x", constructor: 1 }]))).toEqual(
      refused("the messages API field 'messages[0].content[0].constructor' cannot be carried to the provider's format."),
    );
    expect(errorOf(() => read({ ...base, messages: [{ role: "user", content: "x", name: "bob" }] }))).toEqual(
      refused("the messages API field 'messages[0].name' cannot be carried to the provider's format."),
    );
  });

  it("reads huge and deeply nested requests without overflowing the stack", () => {
    const blocks = Array.from({ length: 200_000 }, () => ({ type: "text", text: "x" }));
    const request = read({ ...base, messages: [{ role: "user", content: "first" }, { role: "user", content: blocks }] });
    expect(request.messages).toHaveLength(1);
    expect(request.messages[0]!.content).toHaveLength(200_001);
    const depth = 100_000;
    const input = JSON.parse(`{"a":${"[".repeat(depth)}${"]".repeat(depth)}}`) as unknown;
    expect(errorOf(() => readContent([{ type: "tool_use", id: "t", name: "n", input }], "assistant"))).toEqual(
      malformed("'messages[0].content[0].input' is nested too deeply."),
    );
  });

  it("answers a malformed field with a 400 that names it", () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: 42 }, "'model' must be a string."],
      [{ messages: "Hi" }, "'messages' must be an array."],
      [{ max_tokens: "1024" }, "'max_tokens' must be a non-negative integer."],
      [{ max_tokens: 1.5 }, "'max_tokens' must be a non-negative integer."],
      [{ system: 42 }, "'system' must be a string or an array of text blocks."],
      [{ system: [{ type: "image" }] }, "'system[0].type' must be 'text'."],
      [{ messages: [42] }, "'messages[0]' must be an object."],
      [{ messages: [{ role: "tool", content: "x" }] }, "'messages[0].role' must be 'user', 'assistant' or 'system'."],
      [{ messages: [{ role: "user", content: 42 }] }, "'messages[0].content' must be a string or an array of content blocks."],
      [{ messages: [{ role: "user", content: [{ text: "x" }] }] }, "'messages[0].content[0].type' must be a string."],
      [{ messages: [{ role: "user", content: [{ type: "text", text: 42 }] }] }, "'messages[0].content[0].text' must be a string."],
      [{ messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", data: "x" } }] }] }, "'messages[0].content[0].source.media_type' must be a string."],
      [{ messages: [{ role: "user", content: [{ type: "image", source: { type: "s3" } }] }] }, "'messages[0].content[0].source.type' must be 'base64', 'url' or 'file'."],
      [
        { messages: [{ role: "user", content: [{ type: "tool_use", id: "t", name: "n", input: {} }] }] },
        "'messages[0].content[0]' is a tool_use block, which only an assistant message can hold.",
      ],
      [
        { messages: [{ role: "assistant", content: [{ type: "tool_result", tool_use_id: "t" }] }] },
        "'messages[0].content[0]' is a tool_result block, which only a user message can hold.",
      ],
      [{ messages: [{ role: "assistant", content: [{ type: "tool_use", id: "t", name: "n", input: "{}" }] }] }, "'messages[0].content[0].input' must be an object."],
      [{ messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: 7 }] }] }, "'messages[0].content[0].tool_use_id' must be a string."],
      [{ messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: 7 }] }] }, "'messages[0].content[0].content' must be a string or an array of content blocks."],
      [{ messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t", is_error: "yes" }] }] }, "'messages[0].content[0].is_error' must be a boolean."],
      [{ tools: {} }, "'tools' must be an array."],
      [{ tools: [{ name: "t" }] }, "'tools[0].input_schema' must be an object."],
      [{ tools: [{ type: 3, name: "t" }] }, "'tools[0].type' must be a string."],
      [{ tool_choice: "auto" }, "'tool_choice' must be an object."],
      [{ tool_choice: { type: "required" } }, "'tool_choice.type' must be 'auto', 'any', 'tool' or 'none'."],
      [{ tool_choice: { type: "tool" } }, "'tool_choice.name' must be a string."],
      [{ tool_choice: { type: "auto", disable_parallel_tool_use: 1 } }, "'tool_choice.disable_parallel_tool_use' must be a boolean."],
      [{ temperature: "0.5" }, "'temperature' must be a number."],
      [{ top_k: "40" }, "'top_k' must be a number."],
      [{ stop_sequences: "END" }, "'stop_sequences' must be an array."],
      [{ stop_sequences: ["END", 1] }, "'stop_sequences' must be an array of strings."],
      [{ stream: "yes" }, "'stream' must be a boolean."],
      [{ metadata: "user-1" }, "'metadata' must be an object."],
      [{ metadata: { user_id: 1 } }, "'metadata.user_id' must be a string."],
      [{ thinking: "disabled" }, "'thinking' must be an object."],
    ];
    for (const [extra, message] of cases) expect(errorOf(() => readWith(extra))).toEqual(malformed(message));
  });
});

describe("messages format: writing requests", () => {
  it("writes a full request in Anthropic's order", () => {
    const request = canonical({
      model: "claude-opus-4-1",
      system: ["You are helpful.", "Be brief."],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Look:" },
            { type: "image", source: { kind: "url", url: "https://example.com/a.png" } },
            { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBO" } },
          ],
        },
        { role: "assistant", content: [{ type: "tool_call", id: "call_1", name: "get_weather", arguments: '{"city": "Paris"}' }] },
        {
          role: "user",
          content: [
            { type: "tool_result", callId: "call_1", content: "sunny", isError: false },
            { type: "tool_result", callId: "call_2", content: [{ type: "text", text: "one text" }], isError: true },
            {
              type: "tool_result",
              callId: "call_3",
              content: [
                { type: "text", text: "a" },
                { type: "image", source: { kind: "url", url: "https://example.com/b.png" } },
              ],
              isError: false,
            },
            { type: "text", text: "Go on." },
          ],
        },
        { role: "assistant", content: [{ type: "text", text: "Sure" }] },
      ],
      tools: [
        { name: "get_weather", description: "Weather.", parameters: weatherSchema, strict: true },
        { name: "noop", description: null, parameters: { type: "object", properties: {} }, strict: null },
      ],
      toolChoice: { type: "tool", name: "get_weather" },
      parallelToolCalls: false,
      maxOutputTokens: 500,
      temperature: 0.2,
      topP: 0.8,
      topK: 5,
      stopSequences: ["STOP"],
      stream: true,
      user: "u-1",
    });
    expect(JSON.stringify(messagesFormat.writeRequest(request, 4096))).toBe(
      '{"model":"claude-opus-4-1","max_tokens":500,"system":"You are helpful.\\n\\nBe brief.","messages":[' +
        '{"role":"user","content":[{"type":"text","text":"Look:"},{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}},' +
        '{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]},' +
        '{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}]},' +
        '{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"sunny"},' +
        '{"type":"tool_result","tool_use_id":"call_2","content":"one text","is_error":true},' +
        '{"type":"tool_result","tool_use_id":"call_3","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"https://example.com/b.png"}}]},' +
        '{"type":"text","text":"Go on."}]},' +
        '{"role":"assistant","content":"Sure"}],' +
        '"tools":[{"name":"get_weather","description":"Weather.","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true},' +
        '{"name":"noop","input_schema":{"type":"object","properties":{}}}],' +
        '"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true},' +
        '"temperature":0.2,"top_p":0.8,"top_k":5,"stop_sequences":["STOP"],"stream":true,"metadata":{"user_id":"u-1"}}',
    );
  });

  it("writes a minimal request with the default maximum and without what is unset", () => {
    expect(JSON.stringify(messagesFormat.writeRequest(canonical({ maxOutputTokens: null, streamUsage: false }), 4096))).toBe(
      '{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":"Hi"}]}',
    );
  });

  it("writes every tool_choice, with parallel calls forbidden when asked", () => {
    const tools = [{ name: "t", description: null, parameters: { type: "object" }, strict: null }];
    const choice = (overrides: Partial<CanonicalRequest>) => messagesFormat.writeRequest(canonical({ tools, ...overrides }), 1).tool_choice;
    expect(choice({ toolChoice: { type: "auto" } })).toEqual({ type: "auto" });
    expect(choice({ toolChoice: { type: "required" } })).toEqual({ type: "any" });
    expect(choice({ toolChoice: { type: "none" } })).toEqual({ type: "none" });
    expect(choice({ toolChoice: { type: "tool", name: "t" } })).toEqual({ type: "tool", name: "t" });
    expect(choice({ toolChoice: { type: "required" }, parallelToolCalls: false })).toEqual({ type: "any", disable_parallel_tool_use: true });
    expect(choice({ toolChoice: { type: "none" }, parallelToolCalls: false })).toEqual({ type: "none" });
    expect(choice({ toolChoice: null, parallelToolCalls: false })).toEqual({ type: "auto", disable_parallel_tool_use: true });
    expect(choice({ toolChoice: null, parallelToolCalls: true })).toBeUndefined();
    expect(choice({ toolChoice: { type: "auto" }, parallelToolCalls: true })).toEqual({ type: "auto" });
    // Without tools there is nothing to call in parallel.
    expect(choice({ tools: [], toolChoice: null, parallelToolCalls: false })).toBeUndefined();
  });

  it("refuses what Anthropic's messages API cannot express", () => {
    const json = { type: "json_schema", name: "out", schema: { type: "object" }, strict: true, description: null } as const;
    expect(errorOf(() => messagesFormat.writeRequest(canonical({ responseFormat: json }), 1))).toEqual(refused("Anthropic's messages API has no response_format."));
    expect(errorOf(() => messagesFormat.writeRequest(canonical({ responseFormat: { type: "json_object" } }), 1))).toEqual(
      refused("Anthropic's messages API has no response_format."),
    );
    expect(errorOf(() => messagesFormat.writeRequest(canonical({ reasoningEffort: "low" }), 1))).toEqual(refused("Anthropic's messages API has no reasoning effort."));
    for (const args of ["", "not json", "[1,2]", "null", '"text"', "{"]) {
      const request = canonical({ messages: [{ role: "assistant", content: [{ type: "tool_call", id: "c", name: "n", arguments: args }] }] });
      expect(errorOf(() => messagesFormat.writeRequest(request, 1))).toEqual(refused("a tool call's arguments are not a JSON object."));
    }
    const misplacedCall = canonical({ messages: [{ role: "user", content: [{ type: "tool_call", id: "c", name: "n", arguments: "{}" }] }] });
    expect(errorOf(() => messagesFormat.writeRequest(misplacedCall, 1))).toEqual(refused("a tool call in a user message cannot be written for Anthropic's messages API."));
    const misplacedResult = canonical({ messages: [{ role: "assistant", content: [{ type: "tool_result", callId: "c", content: "", isError: false }] }] });
    expect(errorOf(() => messagesFormat.writeRequest(misplacedResult, 1))).toEqual(
      refused("a tool result in an assistant message cannot be written for Anthropic's messages API."),
    );
  });

  it("reads back what it writes", () => {
    const request = canonical({
      system: ["S"],
      messages: [
        { role: "user", content: [{ type: "text", text: "Q" }] },
        { role: "assistant", content: [{ type: "text", text: "A" }, { type: "tool_call", id: "t1", name: "f", arguments: '{"x":1}' }] },
        { role: "user", content: [{ type: "tool_result", callId: "t1", content: "ok", isError: true }] },
      ],
      tools: [{ name: "f", description: "F.", parameters: { type: "object" }, strict: null }],
      toolChoice: { type: "auto" },
      parallelToolCalls: false,
      temperature: 1,
      stopSequences: ["x"],
      stream: true,
      user: "me",
    });
    expect(messagesFormat.readRequest(messagesFormat.writeRequest(request, 1))).toEqual(request);
  });
});

const answerBody = {
  id: "msg_01XFDUDYJgAACzvnptvVoYEL",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5-20250929",
  content: [
    { type: "thinking", thinking: "The user wants the weather.", signature: "EqQBCgIYAhIM" },
    { type: "text", text: "I'll check the weather.", citations: null },
    { type: "redacted_thinking", data: "EmwKAhgBEgy3" },
    { type: "tool_use", id: "toolu_01A09q90qw90lq917835lq9", name: "get_weather", input: { city: "Paris", unit: "celsius" }, caller: { type: "direct" } },
  ],
  stop_reason: "tool_use",
  stop_sequence: null,
  stop_details: null,
  container: null,
  usage: {
    input_tokens: 120,
    cache_creation_input_tokens: 30,
    cache_read_input_tokens: 2000,
    output_tokens: 95,
    output_tokens_details: { thinking_tokens: 40 },
    server_tool_use: null,
    service_tier: "standard",
  },
};

describe("messages format: answers", () => {
  it("reads an answer: text and tool calls, thinking skipped, usage with cache and thinking tokens", () => {
    expect(messagesFormat.readAnswer(answerBody, 1_750_000_000)).toEqual({
      id: "msg_01XFDUDYJgAACzvnptvVoYEL",
      model: "claude-sonnet-4-5-20250929",
      created: 1_750_000_000,
      content: [
        { type: "text", text: "I'll check the weather." },
        { type: "tool_call", id: "toolu_01A09q90qw90lq917835lq9", name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' },
      ],
      stopReason: "tool_use",
      stopSequence: null,
      usage: { inputTokens: 2150, outputTokens: 95, cachedInputTokens: 2000, cacheWriteInputTokens: 30, reasoningTokens: 40 },
    } satisfies CanonicalAnswer);
  });

  it("reads every stop reason", () => {
    const stop = (stop_reason: unknown, stop_sequence: unknown = null) => {
      const answer = messagesFormat.readAnswer({ ...answerBody, content: [], stop_reason, stop_sequence }, 0);
      return [answer.stopReason, answer.stopSequence];
    };
    expect(stop("end_turn")).toEqual(["end", null]);
    expect(stop("max_tokens")).toEqual(["max_tokens", null]);
    expect(stop("stop_sequence", "END")).toEqual(["stop_sequence", "END"]);
    expect(stop("tool_use")).toEqual(["tool_use", null]);
    expect(stop("refusal")).toEqual(["content_filter", null]);
    expect(stop("pause_turn")).toEqual(["end", null]);
    expect(stop("model_context_window_exceeded")).toEqual(["max_tokens", null]);
    expect(stop(null)).toEqual(["end", null]);
  });

  it("reads usage without cache counts as none cached", () => {
    const answer = messagesFormat.readAnswer({ ...answerBody, content: [], usage: { input_tokens: 10, output_tokens: 3 } }, 0);
    expect(answer.usage).toEqual({ inputTokens: 10, outputTokens: 3, cachedInputTokens: 0, cacheWriteInputTokens: 0, reasoningTokens: 0 });
  });

  it("refuses an answer that is not a message of text and tool calls", () => {
    expect(errorOf(() => messagesFormat.readAnswer({ type: "error", error: {} }, 0))).toEqual(unreadable("it is not a message object."));
    expect(errorOf(() => messagesFormat.readAnswer(null, 0))).toEqual(unreadable("it is not a message object."));
    expect(errorOf(() => messagesFormat.readAnswer({ ...answerBody, content: [{ type: "server_tool_use", id: "s", name: "web_search", input: {} }] }, 0))).toEqual(
      unreadable('the content block type "server_tool_use" is not one the gateway translates.'),
    );
    expect(errorOf(() => messagesFormat.readAnswer({ ...answerBody, stop_reason: "overloaded" }, 0))).toEqual(
      unreadable('the stop reason "overloaded" is not one the gateway translates.'),
    );
    expect(errorOf(() => messagesFormat.readAnswer({ ...answerBody, stop_reason: "toString" }, 0))).toEqual(
      unreadable('the stop reason "toString" is not one the gateway translates.'),
    );
    expect(errorOf(() => messagesFormat.readAnswer({ ...answerBody, usage: { input_tokens: 1 } }, 0))).toEqual(
      unreadable("the usage has no 'input_tokens' or 'output_tokens' count."),
    );
    expect(errorOf(() => messagesFormat.readAnswer({ ...answerBody, content: [{ type: "tool_use", id: "t", name: "n", input: "{}" }] }, 0))).toEqual(
      unreadable("a tool_use block's input is not an object."),
    );
  });

  const answer: CanonicalAnswer = {
    id: "chatcmpl-abc",
    model: "gpt-4.1",
    created: 1_750_000_000,
    content: [
      { type: "text", text: "Let me look." },
      { type: "tool_call", id: "call_Xyz", name: "get_weather", arguments: '{"city":"Paris"}' },
    ],
    stopReason: "tool_use",
    stopSequence: null,
    usage: { inputTokens: 1000, outputTokens: 60, cachedInputTokens: 800, cacheWriteInputTokens: 0, reasoningTokens: 20 },
  };

  it("writes an answer as Anthropic's Message", () => {
    expect(JSON.stringify(messagesFormat.writeAnswer(answer))).toBe(
      '{"id":"chatcmpl-abc","type":"message","role":"assistant","model":"gpt-4.1","content":[{"type":"text","text":"Let me look."},' +
        '{"type":"tool_use","id":"call_Xyz","name":"get_weather","input":{"city":"Paris"}}],"stop_reason":"tool_use","stop_sequence":null,' +
        '"usage":{"input_tokens":200,"cache_creation_input_tokens":0,"cache_read_input_tokens":800,"output_tokens":60}}',
    );
  });

  it("writes every stop reason, and input tokens never below zero", () => {
    const written = (stopReason: CanonicalAnswer["stopReason"], stopSequence: string | null = null) => {
      const body = messagesFormat.writeAnswer({ ...answer, content: [], stopReason, stopSequence });
      return [body.stop_reason, body.stop_sequence];
    };
    expect(written("end")).toEqual(["end_turn", null]);
    expect(written("max_tokens")).toEqual(["max_tokens", null]);
    expect(written("stop_sequence", "END")).toEqual(["stop_sequence", "END"]);
    expect(written("tool_use")).toEqual(["tool_use", null]);
    expect(written("content_filter")).toEqual(["refusal", null]);
    const usage = { inputTokens: 5, outputTokens: 1, cachedInputTokens: 4, cacheWriteInputTokens: 3, reasoningTokens: 0 };
    expect(messagesFormat.writeAnswer({ ...answer, usage }).usage).toEqual({
      input_tokens: 0,
      cache_creation_input_tokens: 3,
      cache_read_input_tokens: 4,
      output_tokens: 1,
    });
  });

  it("refuses to write a tool call whose arguments are not a JSON object", () => {
    for (const args of ["", "[]", "oops"]) {
      const bad: CanonicalAnswer = { ...answer, content: [{ type: "tool_call", id: "c", name: "n", arguments: args }] };
      expect(errorOf(() => messagesFormat.writeAnswer(bad))).toEqual(unreadable("a tool call's arguments are not a JSON object."));
    }
  });
});

/** Server-sent events, parsed as the data plane parses a provider's body. */
function sseEvents(text: string): SseEvent[] {
  return new SseSplitter().push(Buffer.from(text));
}

const sse = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

/** A real Anthropic stream's event sequence: thinking, text and a tool call. */
const providerStream =
  sse("message_start", {
    type: "message_start",
    message: {
      id: "msg_014p7gG3wDgGV9EUtLvnow3U",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5-20250929",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 472, cache_creation_input_tokens: 0, cache_read_input_tokens: 1024, output_tokens: 2, service_tier: "standard" },
    },
  }) +
  sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }) +
  'event: ping\ndata: {"type": "ping"}\n\n' +
  sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Weather in SF." } }) +
  sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQBCgIYAhIM" } }) +
  sse("content_block_stop", { type: "content_block_stop", index: 0 }) +
  sse("content_block_start", { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } }) +
  sse("content_block_delta", { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "Okay, let me check" } }) +
  sse("content_block_delta", { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: " the weather." } }) +
  sse("content_block_stop", { type: "content_block_stop", index: 1 }) +
  sse("content_block_start", {
    type: "content_block_start",
    index: 2,
    content_block: { type: "tool_use", id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "get_weather", input: {} },
  }) +
  sse("content_block_delta", { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "" } }) +
  sse("content_block_delta", { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '{"location":' } }) +
  sse("content_block_delta", { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: ' "San Francisco, CA"}' } }) +
  sse("content_block_stop", { type: "content_block_stop", index: 2 }) +
  sse("message_delta", {
    type: "message_delta",
    delta: { stop_reason: "tool_use", stop_sequence: null },
    usage: { input_tokens: 472, cache_creation_input_tokens: 0, cache_read_input_tokens: 1024, output_tokens: 89, output_tokens_details: { thinking_tokens: 12 } },
  }) +
  sse("message_stop", { type: "message_stop" });

function readStream(text: string, now = 1_750_000_000): StreamEvent[] {
  const reader = messagesFormat.streamReader(now);
  const events = sseEvents(text).flatMap((event) => reader.read(event));
  return [...events, ...reader.end()];
}

describe("messages format: reading a provider's stream", () => {
  it("reads text and tool calls, skipping thinking, with the final usage", () => {
    expect(readStream(providerStream)).toEqual([
      {
        type: "start",
        id: "msg_014p7gG3wDgGV9EUtLvnow3U",
        model: "claude-sonnet-4-5-20250929",
        created: 1_750_000_000,
        usage: { inputTokens: 1496, outputTokens: 2, cachedInputTokens: 1024, cacheWriteInputTokens: 0, reasoningTokens: 0 },
      },
      { type: "block_start", index: 0, block: { type: "text" } },
      { type: "text_delta", index: 0, text: "Okay, let me check" },
      { type: "text_delta", index: 0, text: " the weather." },
      { type: "block_stop", index: 0 },
      { type: "block_start", index: 1, block: { type: "tool_call", id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "get_weather" } },
      { type: "arguments_delta", index: 1, json: '{"location":' },
      { type: "arguments_delta", index: 1, json: ' "San Francisco, CA"}' },
      { type: "block_stop", index: 1 },
      {
        type: "stop",
        stopReason: "tool_use",
        stopSequence: null,
        usage: { inputTokens: 1496, outputTokens: 89, cachedInputTokens: 1024, cacheWriteInputTokens: 0, reasoningTokens: 12 },
      },
    ] satisfies StreamEvent[]);
  });

  it("merges message_delta's usage with message_start's when it repeats only the output", () => {
    const text =
      sse("message_start", { type: "message_start", message: { id: "m", model: "c", usage: { input_tokens: 10, cache_creation_input_tokens: 5, output_tokens: 1 } } }) +
      sse("message_delta", { type: "message_delta", delta: { stop_reason: "stop_sequence", stop_sequence: "END" }, usage: { output_tokens: 7 } }) +
      sse("message_stop", { type: "message_stop" });
    expect(readStream(text, 5).at(-1)).toEqual({
      type: "stop",
      stopReason: "stop_sequence",
      stopSequence: "END",
      usage: { inputTokens: 15, outputTokens: 7, cachedInputTokens: 0, cacheWriteInputTokens: 5, reasoningTokens: 0 },
    });
  });

  it("emits an input already given at a tool_use block's start as one arguments delta", () => {
    const text =
      sse("message_start", { type: "message_start", message: { id: "m", model: "c", usage: { input_tokens: 1, output_tokens: 1 } } }) +
      sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "t", name: "f", input: { a: 1 } } }) +
      sse("content_block_stop", { type: "content_block_stop", index: 0 }) +
      sse("content_block_start", { type: "content_block_start", index: 1, content_block: { type: "text", text: "Hi", citations: null } }) +
      sse("content_block_delta", { type: "content_block_delta", index: 1, delta: { type: "citations_delta", citation: { type: "char_location" } } }) +
      sse("content_block_stop", { type: "content_block_stop", index: 1 }) +
      sse("some_future_event", { type: "some_future_event" }) +
      sse("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 3 } }) +
      sse("message_stop", { type: "message_stop" });
    expect(readStream(text, 5).slice(1, -1)).toEqual([
      { type: "block_start", index: 0, block: { type: "tool_call", id: "t", name: "f" } },
      { type: "arguments_delta", index: 0, json: '{"a":1}' },
      { type: "block_stop", index: 0 },
      { type: "block_start", index: 1, block: { type: "text" } },
      { type: "text_delta", index: 1, text: "Hi" },
      { type: "block_stop", index: 1 },
    ]);
  });

  it("throws the provider's own message on an in-stream error", () => {
    const reader = messagesFormat.streamReader(0);
    const [start, , error] = sseEvents(
      providerStream.slice(0, providerStream.indexOf("event: ping")) +
        'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n',
    );
    expect(reader.read(start!)).toHaveLength(1);
    expect(errorOf(() => reader.read(error!))).toEqual({ status: 502, message: "Overloaded" });
  });

  it("throws at the end of a stream cut short before message_stop", () => {
    const reader = messagesFormat.streamReader(0);
    for (const event of sseEvents(providerStream.slice(0, providerStream.indexOf("event: message_delta")))) reader.read(event);
    let thrown: unknown;
    try {
      reader.end();
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(UpstreamConnectionError);
    expect((thrown as UpstreamConnectionError).code).toBe("ERR_STREAM_INCOMPLETE");
    expect((thrown as UpstreamConnectionError).phase).toBe("body");
  });

  it("refuses a stream that is not what the format says", () => {
    const start = sse("message_start", { type: "message_start", message: { id: "m", model: "c", usage: { input_tokens: 1, output_tokens: 1 } } });
    const failure = (text: string) => {
      const reader = messagesFormat.streamReader(0);
      return errorOf(() => sseEvents(text).forEach((event) => reader.read(event)));
    };
    expect(failure(sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }))).toEqual(
      unreadable("a 'content_block_start' event came before 'message_start'."),
    );
    expect(
      failure(start + sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "server_tool_use", id: "s", name: "web_search", input: {} } })),
    ).toEqual(unreadable('the content block type "server_tool_use" is not one the gateway translates.'));
    expect(failure(start + sse("content_block_delta", { type: "content_block_delta", index: 3, delta: { type: "text_delta", text: "x" } }))).toEqual(
      unreadable("a 'content_block_delta' event came for the content block 3, which was not started."),
    );
    expect(failure(start + "event: message_delta\ndata: {not json\n\n")).toEqual(unreadable("a 'message_delta' event's data is not a JSON object."));
  });
});

describe("messages format: writing a stream", () => {
  const events: StreamEvent[] = [
    {
      type: "start",
      id: "msg_1",
      model: "gpt-4.1",
      created: 1_750_000_000,
      usage: { inputTokens: 100, outputTokens: 1, cachedInputTokens: 60, cacheWriteInputTokens: 10, reasoningTokens: 0 },
    },
    { type: "block_start", index: 0, block: { type: "text" } },
    { type: "text_delta", index: 0, text: "Hello" },
    { type: "text_delta", index: 0, text: ", world" },
    { type: "block_stop", index: 0 },
    { type: "block_start", index: 1, block: { type: "tool_call", id: "call_1", name: "get_weather" } },
    { type: "arguments_delta", index: 1, json: '{"city":' },
    { type: "arguments_delta", index: 1, json: '"Paris"}' },
    { type: "block_stop", index: 1 },
    {
      type: "stop",
      stopReason: "tool_use",
      stopSequence: null,
      usage: { inputTokens: 100, outputTokens: 42, cachedInputTokens: 60, cacheWriteInputTokens: 10, reasoningTokens: 5 },
    },
  ];

  const expectedSse =
    "event: message_start\n" +
    'data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"gpt-4.1","content":[],"stop_reason":null,"stop_sequence":null,' +
    '"usage":{"input_tokens":30,"cache_creation_input_tokens":10,"cache_read_input_tokens":60,"output_tokens":1}}}\n\n' +
    "event: content_block_start\n" +
    'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
    "event: content_block_delta\n" +
    'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}\n\n' +
    "event: content_block_delta\n" +
    'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", world"}}\n\n' +
    "event: content_block_stop\n" +
    'data: {"type":"content_block_stop","index":0}\n\n' +
    "event: content_block_start\n" +
    'data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_1","name":"get_weather","input":{}}}\n\n' +
    "event: content_block_delta\n" +
    'data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"city\\":"}}\n\n' +
    "event: content_block_delta\n" +
    'data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\\"Paris\\"}"}}\n\n' +
    "event: content_block_stop\n" +
    'data: {"type":"content_block_stop","index":1}\n\n' +
    "event: message_delta\n" +
    'data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},' +
    '"usage":{"input_tokens":30,"cache_creation_input_tokens":10,"cache_read_input_tokens":60,"output_tokens":42}}\n\n' +
    "event: message_stop\n" +
    'data: {"type":"message_stop"}\n\n';

  const write = (list: StreamEvent[]) => {
    const writer = messagesFormat.streamWriter({ streamUsage: true });
    return list.map((event) => writer.write(event)).join("");
  };

  it("writes canonical events as Anthropic's server-sent events", () => {
    expect(write(events)).toBe(expectedSse);
  });

  it("writes zero usage at the start when the provider counts only at the end", () => {
    const text = write([
      { type: "start", id: "m", model: "x", created: 0, usage: null },
      { type: "stop", stopReason: "stop_sequence", stopSequence: "END", usage: { inputTokens: 9, outputTokens: 4, cachedInputTokens: 0, cacheWriteInputTokens: 0, reasoningTokens: 0 } },
    ]);
    expect(text).toBe(
      "event: message_start\n" +
        'data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"stop_reason":null,"stop_sequence":null,' +
        '"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}\n\n' +
        "event: message_delta\n" +
        'data: {"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},' +
        '"usage":{"input_tokens":9,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":4}}\n\n' +
        "event: message_stop\n" +
        'data: {"type":"message_stop"}\n\n',
    );
  });

  it("repeats the start's usage at the stop when the stop brings none", () => {
    const text = write([
      { type: "start", id: "m", model: "x", created: 0, usage: { inputTokens: 7, outputTokens: 1, cachedInputTokens: 0, cacheWriteInputTokens: 0, reasoningTokens: 0 } },
      { type: "stop", stopReason: "content_filter", stopSequence: null, usage: null },
    ]);
    expect(text.slice(text.indexOf("event: message_delta"))).toBe(
      "event: message_delta\n" +
        'data: {"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null},' +
        '"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}\n\n' +
        "event: message_stop\n" +
        'data: {"type":"message_stop"}\n\n',
    );
  });

  it("writes the messages family's error event", () => {
    expect(messagesFormat.streamWriter({ streamUsage: true }).error("The provider closed the connection before its response was complete.")).toBe(
      "event: error\n" +
        'data: {"type":"error","error":{"type":"api_error","message":"The provider closed the connection before its response was complete."}}\n\n',
    );
  });

  it("reads back what it writes", () => {
    expect(readStream(expectedSse, 1_750_000_000)).toEqual(events.map((event) => (event.type === "stop" ? { ...event, usage: { ...event.usage!, reasoningTokens: 0 } } : event)));
  });

  /** The official client's stream helper, reading `text` as the body of its request's answer. */
  const sdkStream = (text: string) => {
    const client = new Anthropic({
      apiKey: "test",
      maxRetries: 0,
      fetch: async () => new Response(text, { headers: { "content-type": "text/event-stream" } }),
    });
    return client.messages.stream({ model: "claude-sonnet-4-6", max_tokens: 64, messages: [{ role: "user", content: "Hi" }] });
  };

  it("is assembled by the official SDK into the right final message", async () => {
    const message = await sdkStream(expectedSse).finalMessage();
    expect(JSON.parse(JSON.stringify(message))).toEqual({
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "gpt-4.1",
      content: [
        { type: "text", text: "Hello, world" },
        { type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } },
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 30, cache_creation_input_tokens: 10, cache_read_input_tokens: 60, output_tokens: 42 },
      parsed_output: null,
    });
  });

  it("gives the SDK the input tokens counted only at the end", async () => {
    const text = write([
      { type: "start", id: "m", model: "x", created: 0, usage: null },
      { type: "block_start", index: 0, block: { type: "text" } },
      { type: "text_delta", index: 0, text: "Hi" },
      { type: "block_stop", index: 0 },
      { type: "stop", stopReason: "end", stopSequence: null, usage: { inputTokens: 9, outputTokens: 4, cachedInputTokens: 3, cacheWriteInputTokens: 0, reasoningTokens: 0 } },
    ]);
    const message = await sdkStream(text).finalMessage();
    expect(message.usage).toEqual({ input_tokens: 6, cache_creation_input_tokens: 0, cache_read_input_tokens: 3, output_tokens: 4 });
    expect(message.content).toEqual([{ type: "text", text: "Hi" }]);
    expect(message.stop_reason).toBe("end_turn");
  });

  it("ends the SDK's stream with the error event's message", async () => {
    const writer = messagesFormat.streamWriter({ streamUsage: true });
    const text = writer.write(events[0]!) + writer.write(events[1]!) + writer.error("Upstream failed.");
    const failure = await sdkStream(text)
      .finalMessage()
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).error).toEqual({ type: "error", error: { type: "api_error", message: "Upstream failed." } });
  });
});
