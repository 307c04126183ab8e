import type { Registry } from "prom-client";
import { respond, type NodeServerRequest, type NodeServerResponse } from "./http.ts";

/**
 * /healthz (the process answers), /readyz (it can serve: the database answers, within
 * `readyTimeoutMs`; 0 waits as long as the check takes) and /metrics.
 */
export function createOpsHandler(ready: () => Promise<boolean>, readyTimeoutMs: number, registry: Registry) {
  return async function handleOps(req: NodeServerRequest, res: NodeServerResponse): Promise<boolean> {
    if (req.method !== "GET") return false;
    switch (req.url) {
      case "/healthz":
        respond(res, 200, "application/json", '{"status":"ok"}');
        return true;
      case "/readyz": {
        const ok = await within(ready().catch(() => false), readyTimeoutMs);
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

/** The check's answer, or false once `ms` have passed: a probe must not wait out an outage. */
async function within(check: Promise<boolean>, ms: number): Promise<boolean> {
  if (ms === 0) return check;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([check, late]).finally(() => clearTimeout(timer));
}
