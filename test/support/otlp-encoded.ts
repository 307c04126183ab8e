import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { SpanBatch } from "../../src/platform/otlp-encoding.ts";

/** `spans` as Warden's span queue sends them, one batch: the bytes to compare with the SDK serializer's. */
export function encodeTraceExport(spans: ReadonlyArray<ReadableSpan>): Uint8Array {
  const batch = new SpanBatch();
  for (const span of spans) batch.add(span);
  return batch.encode();
}
