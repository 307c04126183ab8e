import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { GatewayAdminService } from "../../gen/warden/gateway/v1/admin_pb.js";
import { GatewayUsageService } from "../../gen/warden/gateway/v1/usage_pb.js";
import type { CliSettings } from "./settings.ts";

/** The management API's services that the CLI calls, over Connect. */
export interface Api {
  admin: Client<typeof GatewayAdminService>;
  usage: Client<typeof GatewayUsageService>;
}

export function connectApi(settings: CliSettings): Api {
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${settings.apiKey}`);
    return next(req);
  };
  const transport = createConnectTransport({
    baseUrl: settings.url,
    httpVersion: "1.1",
    // Every call has a deadline: a hung server fails the command instead of hanging it.
    defaultTimeoutMs: settings.timeoutMs,
    interceptors: [bearer],
  });
  return { admin: createClient(GatewayAdminService, transport), usage: createClient(GatewayUsageService, transport) };
}

/** A server's error as the CLI prints it: its message and its code as on the wire (`not_found`). */
export function describeServerError(error: ConnectError): string {
  const code = Code[error.code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
  return `${error.rawMessage} (${code})`;
}
