/**
 * The bench's fake OpenAI-style provider, run as a child process of the bench (`node --expose-gc
 * bench/gateway/fake-provider.ts`). It does as little as it can, so that it is never what limits
 * a measurement: POST /v1/responses reads the small JSON body and answers fixed bytes made at
 * start.
 *
 * - `"stream": true` absent: a small JSON Response, with content-length.
 * - `"stream": true`: 20 server-sent events, one write each, one event-loop turn apart
 *   (setImmediate), so that they travel as separate chunks as a real stream's do.
 * - `"stream": true` and model `bench-hold`: the first event, then nothing until the bench sends
 *   {type: "release"} over IPC; then the other 19 events and the end, for every held stream.
 *
 * POST /v1/chat/completions answers in OpenAI's Chat Completions format, the same way: a
 * chat.completion, or a chat.completion.chunk stream (16 events with `stream_options.include_usage`,
 * 15 without, ending with `data: [DONE]`), one event-loop turn apart.
 *
 * Model `bench-varied`: the same, with the next reply number stamped over the placeholder of every
 * answer (answers of one length, never the same twice).
 *
 * It does not check the provider key. It tells the bench its port with {type: "ready", port}.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import "./gc-hook.ts";
import { isToChild, tell } from "./ipc.ts";
import { chatCompleteAnswer, chatStreamAnswer, completeAnswer, holdModel, replyStamp, streamAnswer, variedModel } from "./payloads.ts";

interface Answers {
  complete: Buffer;
  stream: Buffer[];
}
type Api = "responses" | "chat" | "chat-usage";
const answers = new Map<string, Answers>();
function answersFor(model: string, api: Api): Answers {
  const key = `${api} ${model}`;
  let found = answers.get(key);
  if (!found) {
    found =
      api === "responses"
        ? { complete: completeAnswer(model), stream: streamAnswer(model) }
        : { complete: chatCompleteAnswer(model), stream: chatStreamAnswer(model, api === "chat-usage") };
    answers.set(key, found);
  }
  return found;
}

const stampBytes = Buffer.from(replyStamp);
let replies = 0;

/** `answer` with every placeholder of the varied model's answers overwritten by `number` (a copy when it has any). */
function stamped(answer: Buffer, number: Buffer): Buffer {
  let at = answer.indexOf(stampBytes);
  if (at < 0) return answer;
  const copy = Buffer.from(answer);
  for (; at >= 0; at = copy.indexOf(stampBytes, at + number.length)) number.copy(copy, at);
  return copy;
}

const sseHeaders = { "content-type": "text/event-stream", "cache-control": "no-cache" };
const held = new Set<{ res: http.ServerResponse; events: Buffer[] }>();

function writeFrom(res: http.ServerResponse, events: Buffer[], index: number): void {
  if (res.destroyed) return;
  if (index === events.length - 1) {
    res.end(events[index]);
    return;
  }
  res.write(events[index]);
  setImmediate(writeFrom, res, events, index + 1);
}

function answer(res: http.ServerResponse, raw: Buffer, chat: boolean): void {
  let body: { model?: unknown; stream?: unknown; stream_options?: { include_usage?: unknown } };
  try {
    body = JSON.parse(raw.toString("utf8")) as typeof body;
  } catch {
    res.writeHead(400, { "content-type": "application/json" }).end('{"error":{"message":"bad JSON","type":"invalid_request_error","param":null,"code":null}}');
    return;
  }
  const model = typeof body.model === "string" ? body.model : "unknown";
  const api: Api = !chat ? "responses" : body.stream_options?.include_usage === true ? "chat-usage" : "chat";
  let { complete, stream } = answersFor(model, api);
  if (model === variedModel) {
    const number = Buffer.from(String(replies++ % 10 ** replyStamp.length).padStart(replyStamp.length, "0"));
    if (body.stream === true) stream = stream.map((event) => stamped(event, number));
    else complete = stamped(complete, number);
  }
  if (body.stream !== true) {
    res.writeHead(200, { "content-type": "application/json", "content-length": complete.length });
    res.end(complete);
    return;
  }
  res.writeHead(200, sseHeaders);
  if (model === holdModel) {
    res.write(stream[0]);
    const entry = { res, events: stream };
    held.add(entry);
    res.once("close", () => held.delete(entry));
    return;
  }
  writeFrom(res, stream, 0);
}

const server = http.createServer((req, res) => {
  const chat = req.url === "/v1/chat/completions";
  if (req.method !== "POST" || (req.url !== "/v1/responses" && !chat)) {
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found","type":"invalid_request_error","param":null,"code":null}}');
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => answer(res, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks), chat));
});
server.keepAliveTimeout = 65_000;

process.on("message", (message: unknown) => {
  if (!isToChild(message) || message.type !== "release") return;
  const entries = [...held];
  held.clear();
  for (const { res, events } of entries) writeFrom(res, events, 1);
  tell({ type: "released", count: entries.length });
});

// A deep backlog: the bench opens 2,000 held streams in bursts.
server.listen({ port: 0, host: "127.0.0.1", backlog: 4096 }, () => {
  tell({ type: "ready", port: (server.address() as AddressInfo).port });
});
