import type { TracingSettings } from "../../src/platform/tracing.ts";

/** Tracing settings for a collector at `url` (its base): every request sampled, batches sent on a full batch or a flush. */
export function tracingSettings(url: string, overrides: Partial<TracingSettings> = {}): TracingSettings {
  return {
    url: `${url}/v1/traces`,
    headers: {},
    timeoutMs: 5_000,
    serviceName: "warden-test",
    resourceAttributes: {},
    sampler: "parentbased_always_on",
    samplerRatio: 1,
    scheduleDelayMs: 60_000,
    maxQueueSize: 2_048,
    maxExportBatchSize: 512,
    ...overrides,
  };
}
