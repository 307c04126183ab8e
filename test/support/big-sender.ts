/**
 * Sends large gateway requests from a child process (see sendBigRequests), so that building and
 * writing 32 MiB bodies does not run on the event loop of the test process, which also runs the
 * gateway whose latency the test measures. Run as a script: argv[2] is the JSON of a SendPlan; it
 * prints one JSON line per request: {status, body, ms}.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

export interface BigRequest {
  path: "/v1/messages" | "/v1/responses" | "/v1/images/generations";
  /** Bytes of the whole body, about. */
  bytes: number;
  /** "text": one string made of `unit` repeated; "blocks": text blocks of `unit`; "nested": tool results nested in one another, `unit` at the bottom. */
  shape: "text" | "blocks" | "nested";
  unit: string;
  /** Text put before the filler. */
  head?: string;
  /** Text put after the filler. */
  tail?: string;
  /** Sent as x-request-id. */
  requestId?: string;
}

export interface SendPlan {
  url: string;
  key: string;
  requests: BigRequest[];
}

export interface BigAnswer {
  status: number;
  body: string;
  /** From the first byte sent to the last byte of the answer. */
  ms: number;
}

/** The caller text of a "text" request. */
export function textOf(request: BigRequest): string {
  const room = request.bytes - 200 - Buffer.byteLength((request.head ?? "") + (request.tail ?? ""));
  return (request.head ?? "") + request.unit.repeat(Math.floor(room / Buffer.byteLength(request.unit))) + (request.tail ?? "");
}

/** The body of a request, built to about `bytes` bytes. */
export function bigBody(request: BigRequest): string {
  const room = request.bytes - 200 - Buffer.byteLength((request.head ?? "") + (request.tail ?? ""));
  let content: unknown;
  /** The content's JSON when it is built as text. */
  let raw: string | undefined;
  if (request.shape === "text") {
    content = textOf(request);
  } else if (request.shape === "blocks") {
    const block = JSON.stringify({ type: "text", text: request.unit }) + ",";
    const count = Math.floor(room / Buffer.byteLength(block));
    content = [
      ...(request.head ? [{ type: "text", text: request.head }] : []),
      ...Array.from({ length: count }, () => ({ type: "text", text: request.unit })),
      ...(request.tail ? [{ type: "text", text: request.tail }] : []),
    ];
  } else {
    // Built as text: JSON.stringify would recurse as deep as the nesting.
    const open = '[{"type":"tool_result","tool_use_id":"t","content":';
    const close = "}]";
    const depth = Math.floor(room / (open.length + close.length));
    raw = open.repeat(depth) + JSON.stringify((request.head ?? "") + request.unit + (request.tail ?? "")) + close.repeat(depth);
  }
  const contentJson = raw ?? JSON.stringify(content);
  if (request.path === "/v1/messages") return `{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":${contentJson}}]}`;
  if (request.path === "/v1/responses") return `{"model":"gpt-x","input":${contentJson}}`;
  return `{"model":"image-x","prompt":${JSON.stringify(content)}}`;
}

/** Sends the plan's requests one after another from a child process; resolves with their answers. */
export function sendBigRequests(plan: SendPlan): Promise<BigAnswer[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), JSON.stringify(plan)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`the sender exited with ${code}`));
      resolve(out.trim().split("\n").map((line) => JSON.parse(line) as BigAnswer));
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const plan = JSON.parse(process.argv[2] ?? "{}") as SendPlan;
  for (const request of plan.requests) {
    const body = Buffer.from(bigBody(request));
    const started = performance.now();
    const res = await fetch(plan.url + request.path, {
      method: "POST",
      headers: {
        authorization: `Bearer ${plan.key}`,
        "content-type": "application/json",
        ...(request.requestId ? { "x-request-id": request.requestId } : {}),
      },
      body,
    });
    const text = await res.text();
    process.stdout.write(JSON.stringify({ status: res.status, body: text, ms: performance.now() - started } satisfies BigAnswer) + "\n");
  }
}
