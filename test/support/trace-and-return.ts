import pino from "pino";
import { Registry } from "prom-client";
import { Tracing } from "../../src/platform/tracing.ts";

/**
 * A process that exports one span to the collector at argv[2] and then returns without shutting
 * tracing down: it must exit on its own (an idle exporter thread keeps no process alive).
 */
const url = process.argv[2]!;
const tracing = new Tracing(
  {
    url: `${url}/v1/traces`,
    headers: {},
    timeoutMs: 5_000,
    serviceName: "warden-test",
    resourceAttributes: {},
    sampler: "always_on",
    samplerRatio: 1,
    scheduleDelayMs: 60_000,
    maxQueueSize: 16,
    maxExportBatchSize: 16,
  },
  new Registry(),
  pino({ level: "silent" }),
);
tracing.end(tracing.startRequest("exits", { requestId: undefined, traceparent: undefined, tracestate: undefined }, {}).span);
await tracing.forceFlush();
process.stdout.write("flushed\n");
