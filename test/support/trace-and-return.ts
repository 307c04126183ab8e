import pino from "pino";
import { Registry } from "prom-client";
import { Tracing } from "../../src/platform/tracing.ts";
import { tracingSettings } from "./tracing-settings.ts";

/**
 * A process that exports one span to the collector at argv[2] and then returns without shutting
 * tracing down: it must exit on its own (an idle exporter thread keeps no process alive).
 */
const url = process.argv[2]!;
const tracing = new Tracing(tracingSettings(url, { sampler: "always_on", maxQueueSize: 16, maxExportBatchSize: 16 }), new Registry(), pino({ level: "silent" }));
tracing.end(tracing.startRequest("exits", { requestId: undefined, traceparent: undefined, tracestate: undefined }, {}).span);
await tracing.forceFlush();
process.stdout.write("flushed\n");
