import { collectDefaultMetrics, Registry } from "prom-client";
import { respond, type NodeServerRequest, type NodeServerResponse } from "./http.ts";

/** /healthz (the process answers), /readyz (it can serve: the database answers) and /metrics. */
export function createOpsHandler(ready: () => Promise<boolean>) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return async function handleOps(req: NodeServerRequest, res: NodeServerResponse): Promise<boolean> {
    if (req.method !== "GET") return false;
    switch (req.url) {
      case "/healthz":
        respond(res, 200, "application/json", '{"status":"ok"}');
        return true;
      case "/readyz": {
        const ok = await ready().catch(() => false);
        respond(res, ok ? 200 : 503, "application/json", JSON.stringify({ status: ok ? "ready" : "unavailable" }));
        return true;
      }
      case "/metrics":
        respond(res, 200, registry.contentType, await registry.metrics());
        return true;
      default:
        return false;
    }
  };
}

