import { parentPort, workerData } from "node:worker_threads";
import { ExportResultCode } from "@opentelemetry/core";
import { OTLPExporterBase } from "@opentelemetry/otlp-exporter-base";
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from "@opentelemetry/otlp-exporter-base/node-http";
import { ProtobufTraceSerializer, type IExporterMetricsHelper, type ISerializer, type IExportTraceServiceResponse } from "@opentelemetry/otlp-transformer";
import type { SpanExportAnswer, SpanExportJob, SpanExportSettings } from "./span-export-thread.ts";

/**
 * The span exporter's thread (span-export-thread.ts says why it is a thread): the SDK's OTLP/HTTP
 * protobuf exporter, as `OTLPTraceExporter` of @opentelemetry/exporter-trace-otlp-proto builds it
 * (its node:http transport, retries, timeout, headers, compression, concurrency bound and
 * `OTEL_EXPORTER_OTLP_*` variables), given batches already encoded (otlp-encoding.ts). In this
 * isolate its node:http objects cannot make the gateway's compiled code worse, so the SDK's own
 * transport serves: undici, which the gateway's thread used for its exports before they moved
 * here, would cost this thread some 12 MB more to load.
 */

const settings = workerData as SpanExportSettings;

/** The batches arrive encoded; the collector's answer is read by the SDK. */
const serializer: ISerializer<SpanExportJob, IExportTraceServiceResponse> = {
  serializeRequest: (job) => job.body,
  deserializeResponse: (data) => ProtobufTraceSerializer.deserializeResponse(data),
};
/** For the SDK's own exporter metrics (`otel.sdk.exporter.*`, off without a meter provider). */
const counted: IExporterMetricsHelper<SpanExportJob> = { name: "span", countItems: (job) => job.spans };

const options = convertLegacyHttpOptions(
  { url: settings.url, headers: settings.headers, timeoutMillis: settings.timeoutMs, concurrencyLimit: settings.concurrencyLimit },
  "TRACES",
  "v1/traces",
  { "Content-Type": "application/x-protobuf" },
);
const exporter = new OTLPExporterBase(createOtlpHttpExportDelegate(options, serializer, "otlp_http_span_exporter", counted, undefined));

const port = parentPort!;
port.on("message", (job: SpanExportJob) => {
  exporter.export(job, (result) => {
    const answer: SpanExportAnswer =
      result.code === ExportResultCode.SUCCESS ? { id: job.id, ok: true } : { id: job.id, ok: false, error: result.error?.message ?? "the export failed" };
    port.postMessage(answer);
  });
});
