import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Tracing } from "./tracing.ts";

/**
 * One SERVER span per management-API call, whichever door it came through (Connect, gRPC, or REST,
 * which calls in process through the same interceptors): `{service}/{method}`, with the RPC
 * semantic conventions' attributes and, when it failed, its Connect code.
 */
export function tracingInterceptor(tracing: Tracing): Interceptor {
  return (next) => async (req) => {
    const { span } = tracing.startRequest(
      `${req.service.typeName}/${req.method.name}`,
      {
        requestId: req.header.get("x-request-id") ?? undefined,
        traceparent: req.header.get("traceparent") ?? undefined,
        tracestate: req.header.get("tracestate") ?? undefined,
      },
      { "rpc.system": "connect_rpc", "rpc.service": req.service.typeName, "rpc.method": req.method.name },
    );
    let response;
    try {
      response = await next(req);
    } catch (err) {
      const error = ConnectError.from(err);
      const code = codeName(error.code);
      span.setAttribute("rpc.connect_rpc.error_code", code);
      tracing.fail(span, code, error.rawMessage);
      throw err;
    }
    tracing.end(span);
    return response;
  };
}

/** `NotFound` as the Connect protocol writes it: `not_found`. */
function codeName(code: Code): string {
  return Code[code].replace(/[A-Z]/g, (letter, at: number) => (at === 0 ? "" : "_") + letter.toLowerCase());
}
