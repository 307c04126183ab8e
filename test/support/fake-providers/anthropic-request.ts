/**
 * Reads a POST /v1/messages request as the Anthropic API validates it, for the fields the fake reads:
 * max_tokens, messages (roles, content blocks, images, tool_use / tool_result pairing), tools and
 * tool_choice. Messages are Anthropic's own (`<path>: <what is wrong>`).
 */
import { isRecord } from "./common.ts";
import { IMAGE_MEDIA_TYPES, isBase64, isImageMediaType, urlProblem } from "./images.ts";
import { readWith, refuse, type ReadResult, type RequestReading, type ToolChoice, type ToolResultSeen } from "./tools.ts";

/** The content block types the Messages API takes (ContentBlockParam in the SDK). */
const BLOCK_TYPES = [
  "text",
  "image",
  "document",
  "search_result",
  "thinking",
  "redacted_thinking",
  "tool_use",
  "tool_result",
  "server_tool_use",
  "web_search_tool_result",
  "web_fetch_tool_result",
  "code_execution_tool_result",
  "bash_code_execution_tool_result",
  "text_editor_code_execution_tool_result",
  "tool_search_tool_result",
  "container_upload",
];

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

export function readAnthropicRequest(body: Record<string, unknown>): ReadResult {
  return readWith(() => read(body));
}

function read(body: Record<string, unknown>): RequestReading {
  const maxTokens = body.max_tokens;
  if (maxTokens === undefined) refuse("max_tokens: Field required");
  if (typeof maxTokens !== "number" || !Number.isInteger(maxTokens)) refuse("max_tokens: Input should be a valid integer");
  if (maxTokens < 1) refuse("max_tokens: Input should be greater than or equal to 1");
  const tools = readTools(body.tools);
  const choice = readToolChoice(body.tool_choice, tools);
  const messages = body.messages;
  if (messages === undefined) refuse("messages: Field required");
  if (!Array.isArray(messages)) refuse("messages: Input should be a valid list");
  if (messages.length === 0) refuse("messages: at least one message is required");

  const names = new Map<string, string>();
  let images = 0;
  let previousToolUses: string[] = [];
  let results: ToolResultSeen[] = [];
  messages.forEach((message: unknown, i) => {
    const read = readMessage(message, i, messages.length, previousToolUses, names);
    images += read.images;
    results = read.results;
    previousToolUses = read.toolUses;
  });
  const lastRole = (messages.at(-1) as { role: string }).role;
  return { tools, choice, last: lastRole === "assistant" ? "other" : results.length > 0 ? "tool_results" : "user", results, images };
}

interface MessageRead {
  images: number;
  /** The tool_use ids of an assistant message. */
  toolUses: string[];
  /** The tool results of a user message. */
  results: ToolResultSeen[];
}

function readMessage(message: unknown, i: number, count: number, previousToolUses: string[], names: Map<string, string>): MessageRead {
  const at = `messages.${i}`;
  if (!isRecord(message)) refuse(`${at}: Input should be a valid dictionary`);
  const role = message.role;
  if (role === undefined) refuse(`${at}.role: Field required`);
  if (role !== "user" && role !== "assistant") refuse(`${at}.role: Input should be 'user' or 'assistant'`);
  const content = message.content;
  if (content === undefined) refuse(`${at}.content: Field required`);
  const empty = content === "" || (Array.isArray(content) && content.length === 0);
  if (empty && !(role === "assistant" && i === count - 1)) refuse(`${at}: all messages must have non-empty content except for the optional final assistant message`);
  const read: MessageRead = { images: 0, toolUses: [], results: [] };
  const answered = new Set<string>();
  if (typeof content === "string") {
    if (previousToolUses.length > 0) missingResults(i - 1, previousToolUses);
    return read;
  }
  if (!Array.isArray(content)) refuse(`${at}.content: Input should be a valid string or a valid list`);
  content.forEach((block: unknown, j) => {
    const where = `${at}.content.${j}`;
    if (!isRecord(block)) refuse(`${where}: Input should be a valid dictionary`);
    const type = block.type;
    if (typeof type !== "string" || !BLOCK_TYPES.includes(type)) {
      refuse(`${where}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${BLOCK_TYPES.map((t) => `'${t}'`).join(", ")}`);
    }
    switch (type) {
      case "text":
        readText(block, where);
        break;
      case "image":
        read.images += readImage(block, where);
        break;
      case "tool_use": {
        if (role !== "assistant") refuse(`${where}: tool_use blocks can only be in assistant messages`);
        const id = requiredString(block.id, `${where}.id`);
        const name = requiredString(block.name, `${where}.name`);
        if (!isRecord(block.input)) refuse(`${where}.input: Input should be a valid dictionary`);
        names.set(id, name);
        read.toolUses.push(id);
        break;
      }
      case "tool_result": {
        if (role !== "user") refuse(`${where}: tool_result blocks can only be in user messages`);
        const id = requiredString(block.tool_use_id, `${where}.tool_use_id`);
        if (!previousToolUses.includes(id)) {
          refuse(
            `${where}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
        answered.add(id);
        const result = readToolResultContent(block.content, `${where}.content`);
        read.images += result.images;
        read.results.push({ name: names.get(id) ?? "", text: result.text });
        break;
      }
    }
  });
  const unanswered = previousToolUses.filter((id) => !answered.has(id));
  if (unanswered.length > 0) missingResults(i - 1, unanswered);
  return read;
}

function missingResults(assistantIndex: number, ids: string[]): never {
  refuse(
    `messages.${assistantIndex}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${ids.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
  );
}

function requiredString(value: unknown, at: string): string {
  if (value === undefined) refuse(`${at}: Field required`);
  if (typeof value !== "string") refuse(`${at}: Input should be a valid string`);
  return value;
}

function readText(block: Record<string, unknown>, at: string): string {
  const text = requiredString(block.text, `${at}.text`);
  if (text.trim() === "") refuse(`${at}: text content blocks must contain non-whitespace text`);
  return text;
}

/** Checks an image block's source; answers 1 (one image). */
function readImage(block: Record<string, unknown>, at: string): number {
  const source = block.source;
  if (!isRecord(source)) refuse(`${at}.source: Field required`);
  switch (source.type) {
    case "base64": {
      if (!isImageMediaType(source.media_type)) {
        refuse(`${at}.source.base64.media_type: Input should be ${IMAGE_MEDIA_TYPES.map((t) => `'${t}'`).join(", ").replace(/, ([^,]*)$/, " or $1")}`);
      }
      const data = requiredString(source.data, `${at}.source.base64.data`);
      if (!isBase64(data)) refuse(`${at}.source.base64.data: The image data is not valid base64.`);
      return 1;
    }
    case "url": {
      const problem = urlProblem(source.url);
      if (problem !== null) refuse(`${at}.source.url.url: ${problem}`);
      return 1;
    }
    case "file":
      requiredString(source.file_id, `${at}.source.file.file_id`);
      return 1;
    default:
      refuse(`${at}.source: Input tag '${String(source.type)}' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'`);
  }
}

/** A tool_result's content: a string, or text and image blocks (others pass unread). */
function readToolResultContent(content: unknown, at: string): { text: string; images: number } {
  if (content === undefined) return { text: "", images: 0 };
  if (typeof content === "string") return { text: content, images: 0 };
  if (!Array.isArray(content)) refuse(`${at}: Input should be a valid string or a valid list`);
  const texts: string[] = [];
  let images = 0;
  content.forEach((block: unknown, k) => {
    const where = `${at}.${k}`;
    if (!isRecord(block)) refuse(`${where}: Input should be a valid dictionary`);
    if (block.type === "text") texts.push(readText(block, where));
    else if (block.type === "image") images += readImage(block, where);
  });
  return { text: texts.join("\n"), images };
}

/** tools: custom tools only (name + input_schema of type object), names unique. */
function readTools(tools: unknown): string[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) refuse("tools: Input should be a valid list");
  const names = tools.map((tool: unknown, i) => {
    const at = `tools.${i}`;
    if (!isRecord(tool)) refuse(`${at}: Input should be a valid dictionary`);
    if (tool.type !== undefined && tool.type !== null && tool.type !== "custom") {
      refuse(`${at}: the fake provider serves only custom tools (name and input_schema), not '${String(tool.type)}'.`);
    }
    const name = requiredString(tool.name, `${at}.custom.name`);
    if (!TOOL_NAME.test(name)) refuse(`${at}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
    const schema = tool.input_schema;
    if (schema === undefined) refuse(`${at}.custom.input_schema: Field required`);
    if (!isRecord(schema)) refuse(`${at}.custom.input_schema: Input should be a valid dictionary`);
    if (schema.type !== "object") refuse(`${at}.custom.input_schema.type: Input should be 'object'`);
    return name;
  });
  if (new Set(names).size !== names.length) refuse("tools: Tool names must be unique.");
  return names;
}

function readToolChoice(choice: unknown, tools: string[]): ToolChoice {
  if (choice === undefined || choice === null) return { type: "auto" };
  if (!isRecord(choice)) refuse("tool_choice: Input should be a valid dictionary");
  if (choice.type === "none") return { type: "none" };
  if (tools.length === 0) refuse("tool_choice: tool_choice may only be specified while providing tools.");
  switch (choice.type) {
    case "auto":
      return { type: "auto" };
    case "any":
      return { type: "required" };
    case "tool": {
      const name = requiredString(choice.name, "tool_choice.tool.name");
      if (!tools.includes(name)) refuse(`tool_choice.tool.name: Tool '${name}' not found in tools.`);
      return { type: "named", name };
    }
    default:
      refuse(`tool_choice: Input tag '${String(choice.type)}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'`);
  }
}
