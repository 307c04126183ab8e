/**
 * Reads a POST /v1/responses request as the OpenAI API validates it, for the fields the fake reads:
 * input (messages, input_image URLs, function_call / function_call_output pairing), tools and
 * tool_choice. Errors name the `param`, as OpenAI's do.
 */
import type OpenAI from "openai";
import { isRecord, jsonTypeName } from "./common.ts";
import { imageUrlProblem } from "./images.ts";
import { readWith, refuse, type ReadResult, type RequestReading, type ToolChoice, type ToolResultSeen } from "./tools.ts";

const ROLES = ["user", "assistant", "system", "developer"];
const PART_TYPES = ["input_text", "input_image", "input_file", "output_text", "refusal"];
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function readResponsesRequest(body: Record<string, unknown>): ReadResult {
  return readWith(() => read(body));
}

function read(body: Record<string, unknown>): RequestReading {
  const tools = readTools(body.tools);
  const choice = readToolChoice(body.tool_choice, tools);
  const input = body.input;
  if (input === undefined || input === null) return { tools, choice, last: "other", results: [], images: 0 };
  if (typeof input === "string") return { tools, choice, last: "user", results: [], images: 0 };
  if (!Array.isArray(input)) refuse(`Invalid type for 'input': expected a string or an array of input items, but got ${jsonTypeName(input)} instead.`, "input", "invalid_type");

  const names = new Map<string, string>();
  const unanswered = new Set<string>();
  let images = 0;
  let results: ToolResultSeen[] = [];
  input.forEach((item: unknown, i) => {
    const at = `input[${i}]`;
    if (!isRecord(item)) refuse(`Invalid type for '${at}': expected an object, but got ${jsonTypeName(item)} instead.`, at, "invalid_type");
    const type = item.type ?? (item.role === undefined ? undefined : "message");
    if (type !== "function_call_output") results = [];
    switch (type) {
      case "message":
        images += readMessage(item, at);
        break;
      case "function_call": {
        const callId = requiredString(item.call_id, `${at}.call_id`);
        names.set(callId, requiredString(item.name, `${at}.name`));
        requiredString(item.arguments, `${at}.arguments`);
        unanswered.add(callId);
        break;
      }
      case "function_call_output": {
        const callId = requiredString(item.call_id, `${at}.call_id`);
        const name = names.get(callId);
        if (name === undefined) refuse(`No tool call found for function call output with call_id ${callId}.`, "input");
        unanswered.delete(callId);
        const output = readOutput(item.output, `${at}.output`);
        images += output.images;
        results.push({ name, text: output.text });
        break;
      }
      case undefined:
        refuse(`Missing required parameter: '${at}.type'.`, `${at}.type`, "missing_required_parameter");
    }
  });
  for (const callId of unanswered) refuse(`No tool output found for function call ${callId}.`, "input");
  const last: unknown = input.at(-1);
  const lastIsUser = isRecord(last) && (last.type ?? "message") === "message" && last.role === "user";
  return { tools, choice, last: results.length > 0 ? "tool_results" : lastIsUser ? "user" : "other", results, images };
}

function requiredString(value: unknown, at: string): string {
  if (value === undefined) refuse(`Missing required parameter: '${at}'.`, at, "missing_required_parameter");
  if (typeof value !== "string") refuse(`Invalid type for '${at}': expected a string, but got ${jsonTypeName(value)} instead.`, at, "invalid_type");
  return value;
}

/** A message item; answers how many images it holds. */
function readMessage(item: Record<string, unknown>, at: string): number {
  const role = item.role;
  if (typeof role !== "string" || !ROLES.includes(role)) {
    refuse(`Invalid value: '${String(role)}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.`, `${at}.role`, "invalid_value");
  }
  const content = item.content;
  if (typeof content === "string") return 0;
  if (!Array.isArray(content)) refuse(`Invalid type for '${at}.content': expected a string or an array of content parts, but got ${jsonTypeName(content)} instead.`, `${at}.content`, "invalid_type");
  return readParts(content, `${at}.content`);
}

/** Content parts; answers how many images they hold. */
function readParts(parts: unknown[], at: string): number {
  let images = 0;
  parts.forEach((part: unknown, j) => {
    const where = `${at}[${j}]`;
    if (!isRecord(part)) refuse(`Invalid type for '${where}': expected an object, but got ${jsonTypeName(part)} instead.`, where, "invalid_type");
    if (typeof part.type !== "string" || !PART_TYPES.includes(part.type)) {
      refuse(`Invalid value: '${String(part.type)}'. Supported values are: ${PART_TYPES.map((t) => `'${t}'`).join(", ")}.`, `${where}.type`, "invalid_value");
    }
    if (part.type === "input_text" || part.type === "output_text") requiredString(part.text, `${where}.text`);
    if (part.type === "input_image") {
      images += 1;
      if (part.image_url === undefined || part.image_url === null) {
        if (typeof part.file_id !== "string") refuse(`Missing required parameter: '${where}.image_url'.`, `${where}.image_url`, "missing_required_parameter");
      } else {
        const problem = imageUrlProblem(part.image_url);
        if (problem !== null) refuse(`Invalid '${where}.image_url': ${problem}.`, `${where}.image_url`, "invalid_value");
      }
    }
  });
  return images;
}

/** A function_call_output's output: a string, or input_text / input_image / input_file parts. */
function readOutput(output: unknown, at: string): { text: string; images: number } {
  if (output === undefined) refuse(`Missing required parameter: '${at}'.`, at, "missing_required_parameter");
  if (typeof output === "string") return { text: output, images: 0 };
  if (!Array.isArray(output)) refuse(`Invalid type for '${at}': expected a string or an array of content parts, but got ${jsonTypeName(output)} instead.`, at, "invalid_type");
  const images = readParts(output, at);
  const text = output
    .filter((part): part is { type: "input_text"; text: string } => isRecord(part) && part.type === "input_text")
    .map((part) => part.text)
    .join("\n");
  return { text, images };
}

/** tools: function tools only, each with a valid name, names unique. */
function readTools(tools: unknown): string[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) refuse(`Invalid type for 'tools': expected an array of objects, but got ${jsonTypeName(tools)} instead.`, "tools", "invalid_type");
  const names = tools.map((tool: unknown, i) => {
    const at = `tools[${i}]`;
    if (!isRecord(tool)) refuse(`Invalid type for '${at}': expected an object, but got ${jsonTypeName(tool)} instead.`, at, "invalid_type");
    if (tool.type !== "function") refuse(`The fake provider serves only function tools, not '${String(tool.type)}'.`, `${at}.type`, "invalid_value");
    const name = requiredString(tool.name, `${at}.name`);
    if (!TOOL_NAME.test(name)) refuse(`Invalid '${at}.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.`, `${at}.name`, "invalid_value");
    return name;
  });
  if (new Set(names).size !== names.length) refuse("Duplicate tool names are not allowed.", "tools", "invalid_value");
  return names;
}

function readToolChoice(choice: unknown, tools: string[]): ToolChoice {
  if (choice === undefined || choice === null || choice === "auto") return { type: "auto" };
  if (choice === "none") return { type: "none" };
  if (choice === "required") return { type: "required" };
  if (typeof choice === "string") refuse(`Invalid value: '${choice}'. Supported values are: 'none', 'auto', and 'required'.`, "tool_choice", "invalid_value");
  if (!isRecord(choice) || choice.type !== "function") {
    refuse("The fake provider takes tool_choice 'none', 'auto', 'required' or {type: 'function', name}.", "tool_choice", "invalid_value");
  }
  const name = requiredString(choice.name, "tool_choice.name");
  if (!tools.includes(name)) refuse(`Tool choice 'function' not found in 'tools' parameter.`, "tool_choice");
  return { type: "named", name };
}

/** The request's function tools as the Response object echoes them (defaults filled in, as the API does). */
export function echoedTools(body: Record<string, unknown>): OpenAI.Responses.FunctionTool[] {
  if (!Array.isArray(body.tools)) return [];
  return body.tools.filter(isRecord).map((tool) => ({
    type: "function",
    name: String(tool.name),
    description: typeof tool.description === "string" ? tool.description : null,
    parameters: isRecord(tool.parameters) ? tool.parameters : null,
    strict: typeof tool.strict === "boolean" ? tool.strict : true,
  }));
}

/** The request's tool_choice as the Response object echoes it. */
export function echoedToolChoice(body: Record<string, unknown>): OpenAI.Responses.Response["tool_choice"] {
  const choice = body.tool_choice;
  if (choice === "none" || choice === "required") return choice;
  if (isRecord(choice) && choice.type === "function" && typeof choice.name === "string") return { type: "function", name: choice.name };
  return "auto";
}
