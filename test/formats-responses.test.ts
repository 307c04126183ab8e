import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { GatewayError } from "../src/gateway/dataplane/errors.ts";
import type { CanonicalAnswer, CanonicalRequest, StreamEvent, Usage } from "../src/gateway/formats/canonical.ts";
import { responsesFormat } from "../src/gateway/formats/responses.ts";
import { UpstreamConnectionError } from "../src/gateway/providers/errors.ts";
import { SseSplitter, type SseEvent } from "../src/gateway/providers/sse.ts";

const PREFIX = "This request cannot be translated for the provider it is routed to: ";

/** The GatewayError a call throws (the test fails when it throws nothing, or something else). */
function gatewayError(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error("expected a GatewayError, but nothing was thrown");
}

const request = (overrides: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  model: "gpt-4.1",
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
  streamUsage: true,
  parallelToolCalls: null,
  responseFormat: null,
  reasoningEffort: null,
  user: null,
  ...overrides,
});

const WEATHER_SCHEMA = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

describe("responses: reading requests", () => {
  it("reads a multi-turn conversation with system, images, tool calls and results, and every option", () => {
    const body = {
      model: "gpt-4.1",
      instructions: "Be brief.",
      input: [
        { role: "developer", content: "Answer in French." },
        {
          role: "user",
          content: [
            { type: "input_text", text: "What is in these images?" },
            { type: "input_image", image_url: "https://example.com/cat.png", detail: "auto" },
            { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=", detail: "high" },
          ],
        },
        {
          type: "message",
          id: "msg_abc",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: "A cat and a dog.", annotations: [], logprobs: [] }],
        },
        { role: "user", content: "What's the weather in Paris and Lyon?" },
        { type: "function_call", id: "fc_1", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" },
        { type: "function_call", id: "fc_2", call_id: "call_2", name: "get_weather", arguments: '{"city":"Lyon"}', status: "completed" },
        { type: "function_call_output", call_id: "call_1", output: '{"temp":21}' },
        {
          type: "function_call_output",
          call_id: "call_2",
          output: [
            { type: "input_text", text: "Radar:" },
            { type: "input_image", image_url: "https://example.com/radar.png" },
          ],
        },
        {
          role: "system",
          content: [
            { type: "input_text", text: "Use Celsius." },
            { type: "input_text", text: "No emoji." },
          ],
        },
        { role: "user", content: "Thanks." },
      ],
      tools: [{ type: "function", name: "get_weather", description: "Weather for a city.", parameters: WEATHER_SCHEMA, strict: true }],
      tool_choice: "auto",
      max_output_tokens: 512,
      temperature: 0.2,
      top_p: 0.9,
      parallel_tool_calls: false,
      stream: true,
      stream_options: { include_obfuscation: false },
      text: { format: { type: "json_schema", name: "weather", schema: { type: "object" }, strict: true, description: "A report." }, verbosity: null },
      reasoning: { effort: "low", summary: null },
      user: "user-42",
      store: false,
      metadata: { team: "a" },
      service_tier: "auto",
      prompt_cache_key: "k1",
      background: false,
      include: [],
      truncation: "disabled",
      previous_response_id: null,
    };
    expect(responsesFormat.readRequest(body)).toEqual({
      model: "gpt-4.1",
      system: ["Be brief.", "Answer in French.", "Use Celsius.\nNo emoji."],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is in these images?" },
            { type: "image", source: { kind: "url", url: "https://example.com/cat.png" } },
            { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } },
          ],
        },
        { role: "assistant", content: [{ type: "text", text: "A cat and a dog." }] },
        { role: "user", content: [{ type: "text", text: "What's the weather in Paris and Lyon?" }] },
        {
          role: "assistant",
          content: [
            { type: "tool_call", id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
            { type: "tool_call", id: "call_2", name: "get_weather", arguments: '{"city":"Lyon"}' },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", callId: "call_1", content: '{"temp":21}', isError: false },
            {
              type: "tool_result",
              callId: "call_2",
              content: [
                { type: "text", text: "Radar:" },
                { type: "image", source: { kind: "url", url: "https://example.com/radar.png" } },
              ],
              isError: false,
            },
            { type: "text", text: "Thanks." },
          ],
        },
      ],
      tools: [{ name: "get_weather", description: "Weather for a city.", parameters: WEATHER_SCHEMA, strict: true }],
      toolChoice: { type: "auto" },
      maxOutputTokens: 512,
      temperature: 0.2,
      topP: 0.9,
      topK: null,
      stopSequences: [],
      stream: true,
      streamUsage: true,
      parallelToolCalls: false,
      responseFormat: { type: "json_schema", name: "weather", schema: { type: "object" }, strict: true, description: "A report." },
      reasoningEffort: "low",
      user: "user-42",
    } satisfies CanonicalRequest);
  });

  it("reads a string input as one user message, with nothing else set", () => {
    expect(responsesFormat.readRequest({ model: "gpt-4.1-mini", input: "Hello" })).toEqual({
      model: "gpt-4.1-mini",
      system: [],
      messages: [{ role: "user", content: [{ type: "text", text: "Hello" }] }],
      tools: [],
      toolChoice: null,
      maxOutputTokens: null,
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
    } satisfies CanonicalRequest);
  });

  it("reads refusal parts as text and a function without parameters as taking an empty object", () => {
    const read = responsesFormat.readRequest({
      model: "m",
      input: [
        { role: "user", content: "Do something bad." },
        { role: "assistant", content: [{ type: "refusal", refusal: "I can't help with that." }] },
      ],
      tools: [{ type: "function", name: "noop", parameters: null, strict: null, description: null }],
    });
    expect(read.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Do something bad." }] },
      { role: "assistant", content: [{ type: "text", text: "I can't help with that." }] },
    ]);
    expect(read.tools).toEqual([{ name: "noop", description: null, parameters: { type: "object", properties: {} }, strict: null }]);
  });

  it.each([
    ["auto", { type: "auto" }],
    ["none", { type: "none" }],
    ["required", { type: "required" }],
    [{ type: "function", name: "get_weather" }, { type: "tool", name: "get_weather" }],
  ])("reads tool_choice %j", (choice, expected) => {
    expect(responsesFormat.readRequest({ model: "m", input: "x", tool_choice: choice }).toolChoice).toEqual(expected);
  });

  it.each([
    [{ format: { type: "text" } }, null],
    [{ format: { type: "json_object" } }, { type: "json_object" }],
    [
      { format: { type: "json_schema", name: "r", schema: { type: "object" } } },
      { type: "json_schema", name: "r", schema: { type: "object" }, strict: null, description: null },
    ],
    [{}, null],
  ])("reads text %j", (text, expected) => {
    expect(responsesFormat.readRequest({ model: "m", input: "x", text }).responseFormat).toEqual(expected);
  });

  it("reads each reasoning effort the canonical form has", () => {
    for (const effort of ["minimal", "low", "medium", "high"]) {
      expect(responsesFormat.readRequest({ model: "m", input: "x", reasoning: { effort } }).reasoningEffort).toBe(effort);
    }
    expect(responsesFormat.readRequest({ model: "m", input: "x", reasoning: { effort: null } }).reasoningEffort).toBe(null);
  });

  it("takes safety_identifier as the user when there is no user, and user first when both are set", () => {
    expect(responsesFormat.readRequest({ model: "m", input: "x", safety_identifier: "s-1" }).user).toBe("s-1");
    expect(responsesFormat.readRequest({ model: "m", input: "x", safety_identifier: "s-1", user: "u-1" }).user).toBe("u-1");
  });

  it("takes null fields as absent, even unknown ones", () => {
    const read = responsesFormat.readRequest({ model: "m", input: "x", conversation: null, prompt: null, top_logprobs: null, some_new_field: null });
    expect(read.messages).toEqual([{ role: "user", content: [{ type: "text", text: "x" }] }]);
  });

  const refusals: Array<[string, Record<string, unknown>, string]> = [
    ["previous_response_id", { previous_response_id: "resp_1" }, "the field 'previous_response_id' of OpenAI's responses API has no equivalent."],
    ["conversation", { conversation: "conv_1" }, "the field 'conversation' of OpenAI's responses API has no equivalent."],
    ["background", { background: true }, "the field 'background' of OpenAI's responses API has no equivalent."],
    ["include", { include: ["reasoning.encrypted_content"] }, "the field 'include' of OpenAI's responses API has no equivalent."],
    ["prompt", { prompt: { id: "pmpt_1" } }, "the field 'prompt' of OpenAI's responses API has no equivalent."],
    ["top_logprobs", { top_logprobs: 5 }, "the field 'top_logprobs' of OpenAI's responses API has no equivalent."],
    ["max_tool_calls", { max_tool_calls: 3 }, "the field 'max_tool_calls' of OpenAI's responses API has no equivalent."],
    ["truncation auto", { truncation: "auto" }, "the field 'truncation' of OpenAI's responses API has no equivalent."],
    ["an unknown field", { prompt_cache_retention: "24h" }, "the field 'prompt_cache_retention' of OpenAI's responses API has no equivalent."],
    ["text.verbosity", { text: { verbosity: "low" } }, "the field 'text.verbosity' of OpenAI's responses API has no equivalent."],
    ["reasoning.summary", { reasoning: { effort: "low", summary: "auto" } }, "the field 'reasoning.summary' of OpenAI's responses API has no equivalent."],
    ["reasoning effort none", { reasoning: { effort: "none" } }, "the reasoning effort 'none' of OpenAI's responses API has no equivalent."],
    ["reasoning effort xhigh", { reasoning: { effort: "xhigh" } }, "the reasoning effort 'xhigh' of OpenAI's responses API has no equivalent."],
    ["stream_options other than include_obfuscation", { stream_options: { include_usage: true } }, "the field 'stream_options.include_usage' of OpenAI's responses API has no equivalent."],
    ["web_search_preview", { tools: [{ type: "web_search_preview" }] }, "the tool type 'web_search_preview' is a built-in tool of OpenAI's responses API."],
    ["web_search", { tools: [{ type: "web_search" }] }, "the tool type 'web_search' is a built-in tool of OpenAI's responses API."],
    ["file_search", { tools: [{ type: "file_search", vector_store_ids: ["vs_1"] }] }, "the tool type 'file_search' is a built-in tool of OpenAI's responses API."],
    ["code_interpreter", { tools: [{ type: "code_interpreter", container: { type: "auto" } }] }, "the tool type 'code_interpreter' is a built-in tool of OpenAI's responses API."],
    ["computer_use_preview", { tools: [{ type: "computer_use_preview" }] }, "the tool type 'computer_use_preview' is a built-in tool of OpenAI's responses API."],
    ["mcp", { tools: [{ type: "mcp", server_label: "x" }] }, "the tool type 'mcp' is a built-in tool of OpenAI's responses API."],
    ["image_generation", { tools: [{ type: "image_generation" }] }, "the tool type 'image_generation' is a built-in tool of OpenAI's responses API."],
    ["local_shell", { tools: [{ type: "local_shell" }] }, "the tool type 'local_shell' is a built-in tool of OpenAI's responses API."],
    ["custom", { tools: [{ type: "custom", name: "grammar" }] }, "the tool type 'custom' is a built-in tool of OpenAI's responses API."],
    [
      "a function tool's defer_loading",
      { tools: [{ type: "function", name: "f", parameters: {}, strict: false, defer_loading: true }] },
      "the function tool field 'defer_loading' of OpenAI's responses API has no equivalent.",
    ],
    ["tool_choice allowed_tools", { tool_choice: { type: "allowed_tools", mode: "auto", tools: [] } }, "the tool_choice type 'allowed_tools' of OpenAI's responses API has no equivalent."],
    ["tool_choice file_search", { tool_choice: { type: "file_search" } }, "the tool_choice type 'file_search' of OpenAI's responses API has no equivalent."],
    ["a reasoning item", { input: [{ type: "reasoning", id: "rs_1", summary: [] }] }, "the input item type 'reasoning' of OpenAI's responses API has no equivalent."],
    ["an item_reference", { input: [{ type: "item_reference", id: "msg_1" }] }, "the input item type 'item_reference' of OpenAI's responses API has no equivalent."],
    ["a web_search_call", { input: [{ type: "web_search_call", id: "ws_1", status: "completed" }] }, "the input item type 'web_search_call' of OpenAI's responses API has no equivalent."],
    ["a file_search_call", { input: [{ type: "file_search_call", id: "fs_1" }] }, "the input item type 'file_search_call' of OpenAI's responses API has no equivalent."],
    ["a computer_call", { input: [{ type: "computer_call", id: "cu_1" }] }, "the input item type 'computer_call' of OpenAI's responses API has no equivalent."],
    ["a computer_call_output", { input: [{ type: "computer_call_output", call_id: "c" }] }, "the input item type 'computer_call_output' of OpenAI's responses API has no equivalent."],
    ["a custom_tool_call", { input: [{ type: "custom_tool_call", call_id: "c" }] }, "the input item type 'custom_tool_call' of OpenAI's responses API has no equivalent."],
    ["an mcp_call", { input: [{ type: "mcp_call", id: "m" }] }, "the input item type 'mcp_call' of OpenAI's responses API has no equivalent."],
    ["a local_shell_call", { input: [{ type: "local_shell_call", id: "l" }] }, "the input item type 'local_shell_call' of OpenAI's responses API has no equivalent."],
    ["an input_file part", { input: [{ role: "user", content: [{ type: "input_file", file_id: "file_1" }] }] }, "the content part type 'input_file' of OpenAI's responses API has no equivalent."],
    [
      "an input_audio part",
      { input: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] }] },
      "the content part type 'input_audio' of OpenAI's responses API has no equivalent.",
    ],
    [
      "an image by file_id",
      { input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1", detail: "auto" }] }] },
      "an 'input_image' part refers to an uploaded file by 'file_id', which only OpenAI can resolve.",
    ],
    [
      "a file in a function_call_output",
      { input: [{ type: "function_call_output", call_id: "c", output: [{ type: "input_file", file_id: "file_1" }] }] },
      "the content part type 'input_file' of OpenAI's responses API has no equivalent.",
    ],
    [
      "an image in a developer message",
      { input: [{ role: "developer", content: [{ type: "input_image", image_url: "https://example.com/a.png" }] }] },
      "a developer message holds an image, and system prompts carry text only.",
    ],
  ];

  it.each(refusals)("refuses %s", (_, fields, detail) => {
    const error = gatewayError(() => responsesFormat.readRequest({ model: "m", input: "x", ...fields }));
    expect(error.status).toBe(400);
    expect(error.message).toBe(PREFIX + detail);
  });

  const malformed: Array<[Record<string, unknown>, string]> = [
    [{ model: 5, input: "x" }, "'model' must be a string."],
    [{ model: "m", input: 42 }, "'input' must be a string or an array."],
    [{ model: "m", input: [1] }, "'input[0]' must be an object."],
    [{ model: "m", input: [{ role: "tool", content: "x" }] }, "'input[0].role' must be 'user', 'assistant', 'system' or 'developer'."],
    [{ model: "m", input: [{ role: "user", content: 5 }] }, "'input[0].content' must be a string or an array."],
    [{ model: "m", input: [{ role: "user", content: [{ type: "input_text" }] }] }, "'input[0].content[0].text' must be a string."],
    [{ model: "m", input: [{ role: "user", content: [{ text: "x" }] }] }, "'input[0].content[0].type' must be a string."],
    [{ model: "m", input: [{ role: "user", content: [{ type: "input_image", detail: "auto" }] }] }, "'input[0].content[0].image_url' must be a string."],
    [{ model: "m", input: [{ type: 7 }] }, "'input[0].type' must be a string."],
    [{ model: "m", input: [{ type: "function_call", name: "f", arguments: "{}" }] }, "'input[0].call_id' must be a string."],
    [{ model: "m", input: [{ type: "function_call", call_id: "c", name: "f", arguments: {} }] }, "'input[0].arguments' must be a string."],
    [{ model: "m", input: [{ type: "function_call_output", call_id: "c", output: 5 }] }, "'input[0].output' must be a string or an array."],
    [{ model: "m", input: "x", instructions: 5 }, "'instructions' must be a string."],
    [{ model: "m", input: "x", tools: {} }, "'tools' must be an array."],
    [{ model: "m", input: "x", tools: [{ type: "function" }] }, "'tools[0].name' must be a string."],
    [{ model: "m", input: "x", tools: [{ type: "function", name: "f", parameters: "{}" }] }, "'tools[0].parameters' must be an object."],
    [{ model: "m", input: "x", tool_choice: "any" }, "'tool_choice' must be 'auto', 'none', 'required' or an object."],
    [{ model: "m", input: "x", tool_choice: { type: "function" } }, "'tool_choice.name' must be a string."],
    [{ model: "m", input: "x", max_output_tokens: "100" }, "'max_output_tokens' must be an integer."],
    [{ model: "m", input: "x", max_output_tokens: 1.5 }, "'max_output_tokens' must be an integer."],
    [{ model: "m", input: "x", temperature: "hot" }, "'temperature' must be a number."],
    [{ model: "m", input: "x", top_p: [] }, "'top_p' must be a number."],
    [{ model: "m", input: "x", parallel_tool_calls: "yes" }, "'parallel_tool_calls' must be a boolean."],
    [{ model: "m", input: "x", stream: 1 }, "'stream' must be a boolean."],
    [{ model: "m", input: "x", text: "json" }, "'text' must be an object."],
    [{ model: "m", input: "x", text: { format: { type: "xml" } } }, "'text.format.type' must be 'text', 'json_object' or 'json_schema'."],
    [{ model: "m", input: "x", text: { format: { type: "json_schema", schema: {} } } }, "'text.format.name' must be a string."],
    [{ model: "m", input: "x", reasoning: "high" }, "'reasoning' must be an object."],
    [{ model: "m", input: "x", reasoning: { effort: 3 } }, "'reasoning.effort' must be a string."],
    [{ model: "m", input: "x", user: 42 }, "'user' must be a string."],
  ];

  it.each(malformed)("answers 400 to the malformed %j", (body, message) => {
    const error = gatewayError(() => responsesFormat.readRequest(body));
    expect(error.status).toBe(400);
    expect(error.message).toBe(message);
  });

  it("reads a long conversation in one pass", () => {
    const input = Array.from({ length: 50_000 }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `turn ${i}` }));
    const read = responsesFormat.readRequest({ model: "m", input });
    expect(read.messages).toHaveLength(50_000);
    // Consecutive same-role items merge, however many there are.
    const same = Array.from({ length: 200_000 }, () => ({ type: "function_call_output", call_id: "c", output: "ok" }));
    expect(responsesFormat.readRequest({ model: "m", input: same }).messages[0].content).toHaveLength(200_000);
  });
});

describe("responses: writing requests", () => {
  it("writes a conversation with system, images, tool calls, tool results and every option", () => {
    const written = responsesFormat.writeRequest(
      request({
        system: ["Be brief.", "Answer in French."],
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "Describe:" },
              { type: "image", source: { kind: "url", url: "https://example.com/cat.png" } },
              { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } },
            ],
          },
          {
            role: "assistant",
            content: [
              { type: "text", text: "Let me check." },
              { type: "tool_call", id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
              { type: "tool_call", id: "call_2", name: "get_weather", arguments: '{"city":"Lyon"}' },
            ],
          },
          {
            role: "user",
            content: [
              { type: "tool_result", callId: "call_1", content: '{"temp":21}', isError: false },
              {
                type: "tool_result",
                callId: "call_2",
                content: [
                  { type: "text", text: "Radar:" },
                  { type: "image", source: { kind: "url", url: "https://example.com/radar.png" } },
                ],
                isError: false,
              },
              {
                type: "tool_result",
                callId: "call_3",
                content: [
                  { type: "text", text: "a" },
                  { type: "text", text: "b" },
                ],
                isError: true,
              },
              { type: "text", text: "Thanks." },
            ],
          },
        ],
        tools: [
          { name: "get_weather", description: "Weather for a city.", parameters: WEATHER_SCHEMA, strict: null },
          { name: "noop", description: null, parameters: { type: "object", properties: {} }, strict: true },
        ],
        toolChoice: { type: "tool", name: "get_weather" },
        maxOutputTokens: 512,
        temperature: 0.2,
        topP: 0.9,
        stream: true,
        parallelToolCalls: false,
        responseFormat: { type: "json_schema", name: "weather", schema: { type: "object" }, strict: true, description: "A report." },
        reasoningEffort: "low",
        user: "user-42",
      }),
      4096,
    );
    expect(JSON.stringify(written)).toBe(
      String.raw`{"model":"gpt-4.1","instructions":"Be brief.\n\nAnswer in French.","input":[` +
        String.raw`{"role":"user","content":[{"type":"input_text","text":"Describe:"},{"type":"input_image","image_url":"https://example.com/cat.png","detail":"auto"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"}]},` +
        String.raw`{"role":"assistant","content":[{"type":"output_text","text":"Let me check."}]},` +
        String.raw`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
        String.raw`{"type":"function_call","call_id":"call_2","name":"get_weather","arguments":"{\"city\":\"Lyon\"}"},` +
        String.raw`{"type":"function_call_output","call_id":"call_1","output":"{\"temp\":21}"},` +
        String.raw`{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"Radar:"},{"type":"input_image","image_url":"https://example.com/radar.png","detail":"auto"}]},` +
        String.raw`{"type":"function_call_output","call_id":"call_3","output":"a\nb"},` +
        String.raw`{"role":"user","content":[{"type":"input_text","text":"Thanks."}]}],` +
        String.raw`"tools":[{"type":"function","name":"get_weather","description":"Weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":false},` +
        String.raw`{"type":"function","name":"noop","parameters":{"type":"object","properties":{}},"strict":true}],` +
        String.raw`"tool_choice":{"type":"function","name":"get_weather"},"max_output_tokens":512,"temperature":0.2,"top_p":0.9,"parallel_tool_calls":false,` +
        String.raw`"text":{"format":{"type":"json_schema","name":"weather","description":"A report.","schema":{"type":"object"},"strict":true}},` +
        String.raw`"reasoning":{"effort":"low"},"stream":true,"user":"user-42"}`,
    );
  });

  it("leaves out every option that is null, and the instructions when there is no system prompt", () => {
    expect(JSON.stringify(responsesFormat.writeRequest(request(), 4096))).toBe(
      `{"model":"gpt-4.1","input":[{"role":"user","content":[{"type":"input_text","text":"Hi"}]}]}`,
    );
  });

  it("writes a tool result that comes before the text of its message first, as given", () => {
    const written = responsesFormat.writeRequest(
      request({
        messages: [
          { role: "user", content: [{ type: "text", text: "Go" }] },
          { role: "assistant", content: [{ type: "tool_call", id: "c1", name: "f", arguments: "{}" }, { type: "text", text: "Done?" }] },
          { role: "user", content: [{ type: "tool_result", callId: "c1", content: [], isError: false }] },
        ],
      }),
      4096,
    );
    expect(JSON.stringify(written.input)).toBe(
      `[{"role":"user","content":[{"type":"input_text","text":"Go"}]},` +
        `{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},` +
        `{"role":"assistant","content":[{"type":"output_text","text":"Done?"}]},` +
        `{"type":"function_call_output","call_id":"c1","output":""}]`,
    );
  });

  it.each([
    [{ type: "auto" }, `"auto"`],
    [{ type: "none" }, `"none"`],
    [{ type: "required" }, `"required"`],
  ] as const)("writes tool_choice %j", (toolChoice, expected) => {
    expect(JSON.stringify(responsesFormat.writeRequest(request({ toolChoice }), 4096).tool_choice)).toBe(expected);
  });

  it("writes a json_object format, and a json_schema one without its null description and strict", () => {
    expect(JSON.stringify(responsesFormat.writeRequest(request({ responseFormat: { type: "json_object" } }), 4096).text)).toBe(
      `{"format":{"type":"json_object"}}`,
    );
    const format = { type: "json_schema", name: "r", schema: { type: "object" }, strict: null, description: null } as const;
    expect(JSON.stringify(responsesFormat.writeRequest(request({ responseFormat: format }), 4096).text)).toBe(
      `{"format":{"type":"json_schema","name":"r","schema":{"type":"object"}}}`,
    );
  });

  it.each([
    ["stop sequences", { stopSequences: ["END"] }, "OpenAI's responses API has no stop sequences."],
    ["top_k", { topK: 40 }, "OpenAI's responses API has no top_k."],
    [
      "an image in an assistant message",
      { messages: [{ role: "assistant", content: [{ type: "image", source: { kind: "url", url: "https://example.com/a.png" } }] }] },
      "an assistant message holds an image, which OpenAI's responses API does not take.",
    ],
  ] as Array<[string, Partial<CanonicalRequest>, string]>)("refuses %s", (_, overrides, detail) => {
    const error = gatewayError(() => responsesFormat.writeRequest(request(overrides), 4096));
    expect(error.status).toBe(400);
    expect(error.message).toBe(PREFIX + detail);
  });
});

const USAGE: Usage = { inputTokens: 120, outputTokens: 45, cachedInputTokens: 100, cacheWriteInputTokens: 0, reasoningTokens: 30 };

/** A Response as OpenAI answers it, with the given status, output and usage. */
function providerResponse(fields: Record<string, unknown>): Record<string, unknown> {
  return {
    id: "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    object: "response",
    created_at: 1741476542,
    status: "completed",
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model: "o4-mini-2025-04-16",
    output: [],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: "low", summary: null },
    store: true,
    temperature: 1.0,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: 1.0,
    truncation: "disabled",
    usage: {
      input_tokens: 120,
      input_tokens_details: { cached_tokens: 100 },
      output_tokens: 45,
      output_tokens_details: { reasoning_tokens: 30 },
      total_tokens: 165,
    },
    user: null,
    metadata: {},
    ...fields,
  };
}

const REASONING_ITEM = { id: "rs_1", type: "reasoning", summary: [] };
const TEXT_ITEM = {
  id: "msg_1",
  type: "message",
  status: "completed",
  role: "assistant",
  content: [
    { type: "output_text", text: "Paris is sunny", annotations: [], logprobs: [] },
    { type: "output_text", text: ", Lyon rainy.", annotations: [] },
  ],
};
const CALL_ITEM = { id: "fc_1", type: "function_call", status: "completed", arguments: '{"city":"Paris"}', call_id: "call_1", name: "get_weather" };

describe("responses: reading answers", () => {
  it("reads text parts (kept apart), a refusal, and a function call; skips reasoning; the call makes it tool_use", () => {
    const refusal = { id: "msg_2", type: "message", status: "completed", role: "assistant", content: [{ type: "refusal", refusal: "No." }] };
    expect(responsesFormat.readAnswer(providerResponse({ output: [REASONING_ITEM, TEXT_ITEM, refusal, CALL_ITEM] }), 5)).toEqual({
      id: "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
      model: "o4-mini-2025-04-16",
      created: 1741476542,
      content: [
        { type: "text", text: "Paris is sunny" },
        { type: "text", text: ", Lyon rainy." },
        { type: "text", text: "No." },
        { type: "tool_call", id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
      ],
      stopReason: "tool_use",
      stopSequence: null,
      usage: USAGE,
    } satisfies CanonicalAnswer);
  });

  it("reads the cache-write tokens when the provider counts them", () => {
    const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 2, cache_write_tokens: 3 }, output_tokens: 4, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 14 };
    expect(responsesFormat.readAnswer(providerResponse({ output: [TEXT_ITEM], usage }), 5).usage).toEqual({
      inputTokens: 10,
      outputTokens: 4,
      cachedInputTokens: 2,
      cacheWriteInputTokens: 3,
      reasoningTokens: 0,
    });
  });

  it.each([
    [{ status: "completed", output: [TEXT_ITEM] }, "end"],
    [{ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output: [TEXT_ITEM] }, "max_tokens"],
    [{ status: "incomplete", incomplete_details: { reason: "content_filter" }, output: [] }, "content_filter"],
  ])("reads the stop reason of %j", (fields, stopReason) => {
    expect(responsesFormat.readAnswer(providerResponse(fields), 5).stopReason).toBe(stopReason);
  });

  it("takes `now` as created when the answer has no created_at, and no usage as zero", () => {
    const answer = responsesFormat.readAnswer(providerResponse({ created_at: undefined, usage: null, output: [TEXT_ITEM] }), 1700000123);
    expect(answer.created).toBe(1700000123);
    expect(answer.usage).toEqual({ inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, cacheWriteInputTokens: 0, reasoningTokens: 0 });
  });

  it("throws the provider's own message for a failed response", () => {
    const error = gatewayError(() =>
      responsesFormat.readAnswer(providerResponse({ status: "failed", error: { code: "server_error", message: "The model crashed." }, output: [], usage: null }), 5),
    );
    expect(error.status).toBe(502);
    expect(error.message).toBe("The model crashed.");
  });

  it.each([
    ["a string", "oops", "the answer is not a JSON object."],
    ["an in-progress response", providerResponse({ status: "in_progress" }), `the response's status is "in_progress", not a finished one.`],
    ["an unknown incomplete reason", providerResponse({ status: "incomplete", incomplete_details: { reason: "max_messages" } }), `the response is incomplete for a reason the gateway does not translate ("max_messages").`],
    ["no output", providerResponse({ output: null }), "the response has no output array."],
    ["a built-in tool's item", providerResponse({ output: [{ type: "web_search_call", id: "ws_1" }] }), `the output item type "web_search_call" is not one the gateway translates.`],
    ["a function call without arguments", providerResponse({ output: [{ type: "function_call", call_id: "c", name: "f" }] }), "a function_call item lacks its call_id, name or arguments."],
    ["usage without counts", providerResponse({ usage: { total_tokens: 3 } }), "the usage has no 'input_tokens' or 'output_tokens' count."],
  ])("answers 502 to %s", (_, body, detail) => {
    const error = gatewayError(() => responsesFormat.readAnswer(body, 5));
    expect(error.status).toBe(502);
    expect(error.message).toBe(`The provider's answer could not be read: ${detail}`);
  });
});

const ANSWER: CanonicalAnswer = {
  id: "msg_01XFDUDYJgAACzvnptvVoYEL",
  model: "claude-sonnet-4-5",
  created: 1700000000,
  content: [
    { type: "text", text: "Let me" },
    { type: "text", text: " check." },
    { type: "tool_call", id: "toolu_01A", name: "get_weather", arguments: '{"city":"Paris"}' },
    { type: "text", text: "Meanwhile…" },
  ],
  stopReason: "tool_use",
  stopSequence: null,
  usage: { inputTokens: 120, outputTokens: 45, cachedInputTokens: 100, cacheWriteInputTokens: 10, reasoningTokens: 0 },
};

describe("responses: writing answers", () => {
  it("writes a whole Response: each run of text one message item, each tool call a function_call item", () => {
    expect(JSON.stringify(responsesFormat.writeAnswer(ANSWER))).toBe(
      String.raw`{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","object":"response","created_at":1700000000,"status":"completed","background":false,"completed_at":1700000000,` +
        String.raw`"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"claude-sonnet-4-5","output":[` +
        String.raw`{"id":"msg_0_msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","status":"completed","role":"assistant","content":[` +
        String.raw`{"type":"output_text","annotations":[],"logprobs":[],"text":"Let me"},{"type":"output_text","annotations":[],"logprobs":[],"text":" check."}]},` +
        String.raw`{"id":"fc_toolu_01A","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"toolu_01A","name":"get_weather"},` +
        String.raw`{"id":"msg_2_msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","status":"completed","role":"assistant","content":[` +
        String.raw`{"type":"output_text","annotations":[],"logprobs":[],"text":"Meanwhile…"}]}],` +
        String.raw`"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,` +
        String.raw`"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled",` +
        String.raw`"usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":100,"cache_write_tokens":10},"output_tokens":45,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":165},` +
        String.raw`"metadata":{},"access_programs":null}`,
    );
  });

  it.each([
    ["end", "completed", null],
    ["stop_sequence", "completed", null],
    ["tool_use", "completed", null],
    ["max_tokens", "incomplete", { reason: "max_output_tokens" }],
    ["content_filter", "incomplete", { reason: "content_filter" }],
  ] as const)("writes the stop reason %s as status %s", (stopReason, status, incompleteDetails) => {
    const written = responsesFormat.writeAnswer({ ...ANSWER, content: [{ type: "text", text: "x" }], stopReason });
    expect(written.status).toBe(status);
    expect(written.incomplete_details).toEqual(incompleteDetails);
    expect(written.completed_at).toBe(status === "completed" ? 1700000000 : null);
  });

  it("is read back as it was written", () => {
    expect(responsesFormat.readAnswer(responsesFormat.writeAnswer(ANSWER), 5)).toEqual(ANSWER);
  });
});

// Streams

/** A provider stream's bytes, one SSE event per object, framed as OpenAI frames them. */
const frame = (events: Array<Record<string, unknown>>): string =>
  events.map((event) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`).join("");

/** The SSE events of a body, split from uneven chunks as they arrive from a socket. */
function splitEvents(text: string, chunkSize = 37): SseEvent[] {
  const bytes = Buffer.from(text);
  const splitter = new SseSplitter();
  const events: SseEvent[] = [];
  for (let i = 0; i < bytes.length; i += chunkSize) events.push(...splitter.push(bytes.subarray(i, i + chunkSize)));
  return events;
}

function readStream(text: string): StreamEvent[] {
  const reader = responsesFormat.streamReader(1);
  const out: StreamEvent[] = [];
  for (const event of splitEvents(text)) out.push(...reader.read(event));
  out.push(...reader.end());
  return out;
}

const RESP_ID = "resp_67ccfcdd16748190a91872c75d38539e09e4d4aac714747c";
const inProgress = providerResponse({ id: RESP_ID, status: "in_progress", output: [], usage: null });
const PROVIDER_USAGE = {
  input_tokens: 120,
  input_tokens_details: { cached_tokens: 100 },
  output_tokens: 45,
  output_tokens_details: { reasoning_tokens: 30 },
  total_tokens: 165,
};

/** OpenAI's real event sequence for a reasoning item, a text message and a function call. */
function providerStream(end: Record<string, unknown>): Array<Record<string, unknown>> {
  const msg = { item_id: "msg_1", output_index: 1, content_index: 0 };
  const text = (t: string) => ({ type: "output_text", annotations: [], logprobs: [], text: t });
  const message = (status: string, content: unknown[]) => ({ id: "msg_1", type: "message", status, content, role: "assistant" });
  const call = (status: string, args: string) => ({ id: "fc_1", type: "function_call", status, arguments: args, call_id: "call_1", name: "get_weather" });
  const events: Array<Record<string, unknown>> = [
    { type: "response.created", response: inProgress },
    { type: "response.in_progress", response: inProgress },
    { type: "response.output_item.added", output_index: 0, item: { id: "rs_1", type: "reasoning", summary: [] } },
    { type: "response.reasoning_summary_part.added", item_id: "rs_1", output_index: 0, summary_index: 0, part: { type: "summary_text", text: "" } },
    { type: "response.reasoning_summary_text.delta", item_id: "rs_1", output_index: 0, summary_index: 0, delta: "Checking the weather." },
    { type: "response.reasoning_summary_text.done", item_id: "rs_1", output_index: 0, summary_index: 0, text: "Checking the weather." },
    { type: "response.reasoning_summary_part.done", item_id: "rs_1", output_index: 0, summary_index: 0, part: { type: "summary_text", text: "Checking the weather." } },
    { type: "response.output_item.done", output_index: 0, item: { id: "rs_1", type: "reasoning", summary: [{ type: "summary_text", text: "Checking the weather." }] } },
    { type: "response.output_item.added", output_index: 1, item: message("in_progress", []) },
    { type: "response.content_part.added", ...msg, part: text("") },
    { type: "response.output_text.delta", ...msg, delta: "Let me ", logprobs: [], obfuscation: "Xy3k" },
    { type: "response.output_text.delta", ...msg, delta: "check.", logprobs: [], obfuscation: "a" },
    { type: "response.output_text.done", ...msg, text: "Let me check.", logprobs: [] },
    { type: "response.content_part.done", ...msg, part: text("Let me check.") },
    { type: "response.output_item.done", output_index: 1, item: message("completed", [text("Let me check.")]) },
    { type: "response.output_item.added", output_index: 2, item: call("in_progress", "") },
    { type: "response.function_call_arguments.delta", item_id: "fc_1", output_index: 2, delta: '{"city":', obfuscation: "q" },
    { type: "response.function_call_arguments.delta", item_id: "fc_1", output_index: 2, delta: '"Paris"}', obfuscation: "w" },
    { type: "response.function_call_arguments.done", item_id: "fc_1", output_index: 2, arguments: '{"city":"Paris"}' },
    { type: "response.output_item.done", output_index: 2, item: call("completed", '{"city":"Paris"}') },
    end,
  ];
  return events.map((event, sequence_number) => ({ type: event.type, sequence_number, ...event }));
}

const completedOutput = [REASONING_ITEM, TEXT_ITEM, CALL_ITEM];

describe("responses: reading streams", () => {
  it("reads OpenAI's events for reasoning, text and a function call into canonical events", () => {
    const end = { type: "response.completed", response: providerResponse({ id: RESP_ID, output: completedOutput, usage: PROVIDER_USAGE }) };
    expect(readStream(frame(providerStream(end)))).toEqual([
      { type: "start", id: RESP_ID, model: "o4-mini-2025-04-16", created: 1741476542, usage: null },
      { type: "block_start", index: 0, block: { type: "text" } },
      { type: "text_delta", index: 0, text: "Let me " },
      { type: "text_delta", index: 0, text: "check." },
      { type: "block_stop", index: 0 },
      { type: "block_start", index: 1, block: { type: "tool_call", id: "call_1", name: "get_weather" } },
      { type: "arguments_delta", index: 1, json: '{"city":' },
      { type: "arguments_delta", index: 1, json: '"Paris"}' },
      { type: "block_stop", index: 1 },
      { type: "stop", stopReason: "tool_use", stopSequence: null, usage: USAGE },
    ] satisfies StreamEvent[]);
  });

  it("reads response.incomplete as its reason, closing what the provider left open", () => {
    const events = providerStream({
      type: "response.incomplete",
      response: providerResponse({ id: RESP_ID, status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output: [], usage: PROVIDER_USAGE }),
    });
    // Cut after the first text delta: OpenAI ends a truncated answer without closing its part.
    const cut = [...events.slice(0, 11), events[events.length - 1]];
    expect(readStream(frame(cut))).toEqual([
      { type: "start", id: RESP_ID, model: "o4-mini-2025-04-16", created: 1741476542, usage: null },
      { type: "block_start", index: 0, block: { type: "text" } },
      { type: "text_delta", index: 0, text: "Let me " },
      { type: "block_stop", index: 0 },
      { type: "stop", stopReason: "max_tokens", stopSequence: null, usage: USAGE },
    ] satisfies StreamEvent[]);
  });

  it("reads a refusal part as a text block, and a completed answer without calls as end", () => {
    const refusal = { item_id: "msg_9", output_index: 0, content_index: 0 };
    const item = { id: "msg_9", type: "message", status: "in_progress", content: [], role: "assistant" };
    const text = frame([
      { type: "response.created", sequence_number: 0, response: inProgress },
      { type: "response.output_item.added", sequence_number: 1, output_index: 0, item },
      { type: "response.content_part.added", sequence_number: 2, ...refusal, part: { type: "refusal", refusal: "" } },
      { type: "response.refusal.delta", sequence_number: 3, ...refusal, delta: "I can't help with that." },
      { type: "response.refusal.done", sequence_number: 4, ...refusal, refusal: "I can't help with that." },
      { type: "response.content_part.done", sequence_number: 5, ...refusal, part: { type: "refusal", refusal: "I can't help with that." } },
      { type: "response.output_item.done", sequence_number: 6, output_index: 0, item: { ...item, status: "completed" } },
      { type: "response.completed", sequence_number: 7, response: providerResponse({ id: RESP_ID, usage: null }) },
    ]);
    expect(readStream(text)).toEqual([
      { type: "start", id: RESP_ID, model: "o4-mini-2025-04-16", created: 1741476542, usage: null },
      { type: "block_start", index: 0, block: { type: "text" } },
      { type: "text_delta", index: 0, text: "I can't help with that." },
      { type: "block_stop", index: 0 },
      { type: "stop", stopReason: "end", stopSequence: null, usage: null },
    ] satisfies StreamEvent[]);
  });

  it("throws the provider's message for an in-stream error event", () => {
    const reader = responsesFormat.streamReader(1);
    const [created, error] = splitEvents(
      frame([
        { type: "response.created", sequence_number: 0, response: inProgress },
        { type: "error", sequence_number: 1, code: "server_error", message: "The server had an error while processing your request.", param: null },
      ]),
    );
    reader.read(created);
    const thrown = gatewayError(() => reader.read(error));
    expect(thrown.status).toBe(502);
    expect(thrown.message).toBe("The server had an error while processing your request.");
  });

  it("throws the provider's message for response.failed", () => {
    const reader = responsesFormat.streamReader(1);
    const failed = providerResponse({ id: RESP_ID, status: "failed", error: { code: "server_error", message: "Model overloaded." }, usage: null });
    const [created, end] = splitEvents(
      frame([
        { type: "response.created", sequence_number: 0, response: inProgress },
        { type: "response.failed", sequence_number: 1, response: failed },
      ]),
    );
    reader.read(created);
    const thrown = gatewayError(() => reader.read(end));
    expect(thrown.status).toBe(502);
    expect(thrown.message).toBe("Model overloaded.");
  });

  it("throws from end() when the stream stopped before its answer did", () => {
    const end = { type: "response.completed", response: providerResponse({ id: RESP_ID, output: completedOutput, usage: PROVIDER_USAGE }) };
    const events = splitEvents(frame(providerStream(end).slice(0, 12)));
    const reader = responsesFormat.streamReader(1);
    for (const event of events) reader.read(event);
    expect(() => reader.end()).toThrow(UpstreamConnectionError);
    try {
      reader.end();
    } catch (err) {
      expect((err as UpstreamConnectionError).code).toBe("ERR_STREAM_INCOMPLETE");
      expect((err as UpstreamConnectionError).phase).toBe("body");
    }
  });

  it("answers 502 to a stream that is not OpenAI's", () => {
    const delta = frame([{ type: "response.output_text.delta", sequence_number: 0, item_id: "m", output_index: 0, content_index: 0, delta: "x" }]);
    const first = gatewayError(() => responsesFormat.streamReader(1).read(splitEvents(delta)[0]));
    expect(first.status).toBe(502);
    expect(first.message).toBe("The provider's answer could not be read: the stream's 'response.output_text.delta' event came before 'response.created'.");
    const notJson = gatewayError(() => responsesFormat.streamReader(1).read(splitEvents("event: response.created\ndata: {nope\n\n")[0]));
    expect(notJson.message).toBe("The provider's answer could not be read: a stream event's data is not JSON.");
  });
});

const STREAM_USAGE: Usage = { inputTokens: 20, outputTokens: 9, cachedInputTokens: 4, cacheWriteInputTokens: 0, reasoningTokens: 2 };

/** A canonical stream: text, then a tool call, then stop. */
const CANONICAL_STREAM: StreamEvent[] = [
  { type: "start", id: "resp_1", model: "gpt-4.1", created: 1700000000, usage: null },
  { type: "block_start", index: 0, block: { type: "text" } },
  { type: "text_delta", index: 0, text: "Hel" },
  { type: "text_delta", index: 0, text: "lo" },
  { type: "block_stop", index: 0 },
  { type: "block_start", index: 1, block: { type: "tool_call", id: "call_1", name: "get_weather" } },
  { type: "arguments_delta", index: 1, json: '{"city":' },
  { type: "arguments_delta", index: 1, json: '"Paris"}' },
  { type: "block_stop", index: 1 },
  { type: "stop", stopReason: "tool_use", stopSequence: null, usage: STREAM_USAGE },
];

const IN_PROGRESS_SNAPSHOT =
  `{"id":"resp_1","object":"response","created_at":1700000000,"status":"in_progress","background":false,"completed_at":null,"error":null,` +
  `"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4.1","output":[],"parallel_tool_calls":true,` +
  `"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},` +
  `"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":null,"metadata":{},"access_programs":null}`;

const TEXT_ITEM_DONE = `{"id":"msg_0_resp_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Hello"}]}`;
const CALL_ITEM_DONE = String.raw`{"id":"fc_call_1","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_1","name":"get_weather"}`;

function writeStream(events: StreamEvent[]): string[] {
  const writer = responsesFormat.streamWriter({ streamUsage: true });
  return events.map((event) => writer.write(event));
}

describe("responses: writing streams", () => {
  it("writes each canonical event as OpenAI's events, exactly", () => {
    expect(writeStream(CANONICAL_STREAM)).toEqual([
      `event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":${IN_PROGRESS_SNAPSHOT}}\n\n` +
        `event: response.in_progress\ndata: {"type":"response.in_progress","sequence_number":1,"response":${IN_PROGRESS_SNAPSHOT}}\n\n`,
      `event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_0_resp_1","type":"message","status":"in_progress","role":"assistant","content":[]}}\n\n` +
        `event: response.content_part.added\ndata: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_0_resp_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}\n\n`,
      `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_0_resp_1","output_index":0,"content_index":0,"delta":"Hel","logprobs":[]}\n\n`,
      `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_0_resp_1","output_index":0,"content_index":0,"delta":"lo","logprobs":[]}\n\n`,
      `event: response.output_text.done\ndata: {"type":"response.output_text.done","sequence_number":6,"item_id":"msg_0_resp_1","output_index":0,"content_index":0,"text":"Hello","logprobs":[]}\n\n` +
        `event: response.content_part.done\ndata: {"type":"response.content_part.done","sequence_number":7,"item_id":"msg_0_resp_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"Hello"}}\n\n` +
        `event: response.output_item.done\ndata: {"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":${TEXT_ITEM_DONE}}\n\n`,
      `event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":9,"output_index":1,"item":{"id":"fc_call_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"get_weather"}}\n\n`,
      String.raw`event: response.function_call_arguments.delta` + `\n` + String.raw`data: {"type":"response.function_call_arguments.delta","sequence_number":10,"item_id":"fc_call_1","output_index":1,"delta":"{\"city\":"}` + `\n\n`,
      String.raw`event: response.function_call_arguments.delta` + `\n` + String.raw`data: {"type":"response.function_call_arguments.delta","sequence_number":11,"item_id":"fc_call_1","output_index":1,"delta":"\"Paris\"}"}` + `\n\n`,
      String.raw`event: response.function_call_arguments.done` + `\n` + String.raw`data: {"type":"response.function_call_arguments.done","sequence_number":12,"item_id":"fc_call_1","output_index":1,"arguments":"{\"city\":\"Paris\"}","name":"get_weather"}` + `\n\n` +
        `event: response.output_item.done\ndata: {"type":"response.output_item.done","sequence_number":13,"output_index":1,"item":${CALL_ITEM_DONE}}\n\n`,
      `event: response.completed\ndata: {"type":"response.completed","sequence_number":14,"response":{"id":"resp_1","object":"response","created_at":1700000000,"status":"completed","background":false,"completed_at":1700000000,"error":null,` +
        `"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4.1","output":[${TEXT_ITEM_DONE},${CALL_ITEM_DONE}],"parallel_tool_calls":true,` +
        `"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},` +
        `"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled",` +
        `"usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":4,"cache_write_tokens":0},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":29},` +
        `"metadata":{},"access_programs":null}}\n\n`,
    ]);
  });

  it("writes max_tokens as response.incomplete, with no usage when the provider gave none", () => {
    const written = writeStream([
      { type: "start", id: "resp_1", model: "gpt-4.1", created: 1700000000, usage: null },
      { type: "stop", stopReason: "max_tokens", stopSequence: null, usage: null },
    ]);
    expect(written[1]).toBe(
      `event: response.incomplete\ndata: {"type":"response.incomplete","sequence_number":2,"response":{"id":"resp_1","object":"response","created_at":1700000000,"status":"incomplete","background":false,"completed_at":null,"error":null,` +
        `"incomplete_details":{"reason":"max_output_tokens"},"instructions":null,"max_output_tokens":null,"model":"gpt-4.1","output":[],"parallel_tool_calls":true,` +
        `"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","temperature":null,"text":{"format":{"type":"text"}},` +
        `"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":null,"metadata":{},"access_programs":null}}\n\n`,
    );
  });

  it("writes content_filter as response.incomplete with its reason", () => {
    const written = writeStream([
      { type: "start", id: "resp_1", model: "gpt-4.1", created: 1700000000, usage: null },
      { type: "stop", stopReason: "content_filter", stopSequence: null, usage: STREAM_USAGE },
    ]);
    expect(written[1]).toContain(`"status":"incomplete"`);
    expect(written[1]).toContain(`"incomplete_details":{"reason":"content_filter"}`);
  });

  it("writes error() as OpenAI's error event, numbered after the last event written", () => {
    const writer = responsesFormat.streamWriter({ streamUsage: true });
    writer.write(CANONICAL_STREAM[0]);
    writer.write(CANONICAL_STREAM[1]);
    expect(writer.error("The provider closed the connection before its response was complete.")).toBe(
      `event: error\ndata: {"type":"error","code":null,"message":"The provider closed the connection before its response was complete.","param":null,"sequence_number":4}\n\n`,
    );
  });

  it("is read back by the stream reader as the same canonical events", () => {
    expect(readStream(writeStream(CANONICAL_STREAM).join(""))).toEqual(CANONICAL_STREAM);
  });
});

/** An OpenAI client whose every request is answered with `body`. */
function clientAnswering(body: string, contentType: string): OpenAI {
  return new OpenAI({
    apiKey: "sk-test",
    baseURL: "http://gateway.invalid/v1",
    maxRetries: 0,
    fetch: async () => new Response(body, { status: 200, headers: { "content-type": contentType } }),
  });
}

describe("responses: the official OpenAI SDK reads what the writers write", () => {
  it("assembles the written stream into the final response", async () => {
    const client = clientAnswering(writeStream(CANONICAL_STREAM).join(""), "text/event-stream");
    const stream = client.responses.stream({ model: "gpt-4.1", input: "Weather in Paris?" });
    const deltas: string[] = [];
    stream.on("response.output_text.delta", (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    expect(deltas).toEqual(["Hel", "lo"]);
    expect(final.id).toBe("resp_1");
    expect(final.status).toBe("completed");
    expect(final.output_text).toBe("Hello");
    expect(final.output.map((item) => item.type)).toEqual(["message", "function_call"]);
    const call = final.output[1];
    expect(call.type === "function_call" && [call.call_id, call.name, call.arguments]).toEqual(["call_1", "get_weather", '{"city":"Paris"}']);
    expect(final.usage).toEqual({
      input_tokens: 20,
      input_tokens_details: { cached_tokens: 4, cache_write_tokens: 0 },
      output_tokens: 9,
      output_tokens_details: { reasoning_tokens: 2 },
      total_tokens: 29,
    });
  });

  it("assembles an incomplete stream, and throws on the error event", async () => {
    const incomplete = writeStream([...CANONICAL_STREAM.slice(0, 4), { type: "block_stop", index: 0 }, { type: "stop", stopReason: "max_tokens", stopSequence: null, usage: STREAM_USAGE }]);
    const final = await clientAnswering(incomplete.join(""), "text/event-stream").responses.stream({ model: "gpt-4.1", input: "x" }).finalResponse();
    expect(final.status).toBe("incomplete");
    expect(final.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(final.output_text).toBe("Hello");

    const writer = responsesFormat.streamWriter({ streamUsage: true });
    const failing = writer.write(CANONICAL_STREAM[0]) + writer.write(CANONICAL_STREAM[1]) + writer.error("Upstream went away.");
    const stream = clientAnswering(failing, "text/event-stream").responses.stream({ model: "gpt-4.1", input: "x" });
    await expect(stream.finalResponse()).rejects.toThrow("Upstream went away.");
  });

  it("reads the written non-streamed answer", async () => {
    const client = clientAnswering(JSON.stringify(responsesFormat.writeAnswer(ANSWER)), "application/json");
    const response = await client.responses.create({ model: "gpt-4.1", input: "Weather in Paris?" });
    expect(response.output_text).toBe("Let me check.Meanwhile…");
    expect(response.output.map((item) => item.type)).toEqual(["message", "function_call", "message"]);
    const call = response.output[1];
    expect(call.type === "function_call" && [call.call_id, call.name, call.arguments]).toEqual(["toolu_01A", "get_weather", '{"city":"Paris"}']);
    expect(response.usage?.input_tokens_details.cached_tokens).toBe(100);
  });
});
