import http from "node:http";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Pool } from "undici";
import { ProjectService } from "../gen/warden/projects/v1/projects_pb.js";

export type ProjectClient = Client<typeof ProjectService>;

export interface ConnectClient {
  projects: ProjectClient;
  close(): void;
}

export interface ConnectClientOptions {
  format: "binary" | "json";
  /**
   * Accept gzip and brotli answers, as connect-node does by default; Warden's Connect door then
   * compresses every answer over 1 KiB. Off, both sides send identity bodies, as the REST door does.
   */
  compression: boolean;
  maxSockets: number;
}

/** A Connect client over HTTP/1.1 with keep-alive. */
export function connectClient(baseUrl: string, adminKey: string, options: ConnectClientOptions): ConnectClient {
  const { format, compression, maxSockets } = options;
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${adminKey}`);
    return next(req);
  };
  const transport = createConnectTransport({
    baseUrl,
    httpVersion: "1.1",
    useBinaryFormat: format === "binary",
    interceptors: [auth],
    ...(compression ? {} : { acceptCompression: [] }),
    nodeOptions: { agent },
  });
  return { projects: createClient(ProjectService, transport), close: () => agent.destroy() };
}

export interface RestResponse {
  status: number;
  body: unknown;
}

export interface RestClient {
  call(method: "GET" | "POST", path: string, body?: unknown): Promise<RestResponse>;
  close(): Promise<void>;
}

/** A plain REST client: an undici Pool (keep-alive) that sends and parses JSON. */
export function restClient(baseUrl: string, adminKey: string, connections: number): RestClient {
  const pool = new Pool(baseUrl, { connections });
  const authorization = `Bearer ${adminKey}`;
  return {
    async call(method, path, body) {
      const headers: Record<string, string> = { authorization, accept: "application/json" };
      let payload: string | undefined;
      if (body !== undefined) {
        payload = JSON.stringify(body);
        headers["content-type"] = "application/json";
      }
      const response = await pool.request({ method, path, headers, body: payload });
      const text = await response.body.text();
      return { status: response.statusCode, body: text ? (JSON.parse(text) as unknown) : undefined };
    },
    close: () => pool.close(),
  };
}
