import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";

/**
 * An OTLP/HTTP collector on loopback: it takes `POST /v1/traces` as the OTLP exporters send it
 * (`application/x-protobuf`, an ExportTraceServiceRequest), answers 200 with an empty
 * ExportTraceServiceResponse, and keeps the spans, decoded by the field numbers of
 * opentelemetry-proto (trace/v1/trace.proto, common/v1/common.proto).
 */

export type AttributeValue = string | number | boolean | bigint | AttributeValue[] | null;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  traceState: string;
  name: string;
  /** 1 internal, 2 server, 3 client (SpanKind in trace.proto). */
  kind: number;
  startNanos: bigint;
  endNanos: bigint;
  attributes: Record<string, AttributeValue>;
  links: { traceId: string; spanId: string }[];
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  /** The trace flags (low byte), 0x100 when the parent's remoteness is known, 0x200 when the parent is remote. */
  flags: number;
  resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Content types of the exports received, one per export. */
  contentTypes: string[];
  /** Answers the exports held so far (`hold`), and every later one at once. */
  release(): void;
  close(): Promise<void>;
}

export interface OtlpReceiverOptions {
  /** The status of every answer: 200 by default; 400 is a refusal the exporter does not retry. */
  status?: number;
  /** Hold every answer until `release`: the exports stay in flight. */
  hold?: boolean;
}

export async function startOtlpReceiver(options: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const held: (() => void)[] = [];
  let holding = options.hold ?? false;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      contentTypes.push(req.headers["content-type"] ?? "");
      spans.push(...decodeExport(new Uint8Array(Buffer.concat(chunks))));
      const answer = () => void res.writeHead(options.status ?? 200, { "content-type": "application/x-protobuf" }).end();
      if (holding) held.push(answer);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    release() {
      holding = false;
      for (const answer of held.splice(0)) answer();
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Calls `each(fieldNo, wireType)` for every field of the message in `bytes`; it must consume or skip the value. */
function fields(bytes: Uint8Array, each: (reader: BinaryReader, fieldNo: number, wireType: WireType) => boolean): void {
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag();
    if (!each(reader, fieldNo, wireType)) reader.skip(wireType);
  }
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

function decodeExport(bytes: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  fields(bytes, (r, no) => {
    if (no !== 1) return false;
    // ResourceSpans: resource = 1, scope_spans = 2.
    let resource: Record<string, AttributeValue> = {};
    const scopes: Uint8Array[] = [];
    fields(r.bytes(), (rs, n) => {
      if (n === 1) resource = attributesOf(rs.bytes(), 1);
      else if (n === 2) scopes.push(rs.bytes());
      else return false;
      return true;
    });
    for (const scope of scopes) {
      // ScopeSpans: spans = 2.
      fields(scope, (ss, n) => {
        if (n !== 2) return false;
        out.push({ ...decodeSpan(ss.bytes()), resource });
        return true;
      });
    }
    return true;
  });
  return out;
}

function decodeSpan(bytes: Uint8Array): Omit<ReceivedSpan, "resource"> {
  const span: Omit<ReceivedSpan, "resource"> = {
    traceId: "",
    spanId: "",
    parentSpanId: "",
    traceState: "",
    name: "",
    kind: 0,
    startNanos: 0n,
    endNanos: 0n,
    attributes: {},
    links: [],
    status: { code: 0, message: "" },
    flags: 0,
  };
  fields(bytes, (r, no) => {
    switch (no) {
      case 1:
        span.traceId = hex(r.bytes());
        return true;
      case 2:
        span.spanId = hex(r.bytes());
        return true;
      case 3:
        span.traceState = r.string();
        return true;
      case 4:
        span.parentSpanId = hex(r.bytes());
        return true;
      case 5:
        span.name = r.string();
        return true;
      case 6:
        span.kind = r.int32();
        return true;
      case 7:
        span.startNanos = BigInt(r.fixed64());
        return true;
      case 8:
        span.endNanos = BigInt(r.fixed64());
        return true;
      case 9:
        Object.assign(span.attributes, keyValue(r.bytes()));
        return true;
      case 13: {
        const link = { traceId: "", spanId: "" };
        fields(r.bytes(), (l, n) => {
          if (n === 1) link.traceId = hex(l.bytes());
          else if (n === 2) link.spanId = hex(l.bytes());
          else return false;
          return true;
        });
        span.links.push(link);
        return true;
      }
      case 15:
        fields(r.bytes(), (s, n) => {
          if (n === 2) span.status.message = s.string();
          else if (n === 3) span.status.code = s.int32();
          else return false;
          return true;
        });
        return true;
      case 16:
        span.flags = r.fixed32();
        return true;
    }
    return false;
  });
  return span;
}

/** The KeyValues at `fieldNo` of a message (Resource's attributes are field 1). */
function attributesOf(bytes: Uint8Array, fieldNo: number): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  fields(bytes, (r, no) => {
    if (no !== fieldNo) return false;
    Object.assign(out, keyValue(r.bytes()));
    return true;
  });
  return out;
}

function keyValue(bytes: Uint8Array): Record<string, AttributeValue> {
  let key = "";
  let value: AttributeValue = null;
  fields(bytes, (r, no) => {
    if (no === 1) key = r.string();
    else if (no === 2) value = anyValue(r.bytes());
    else return false;
    return true;
  });
  return { [key]: value };
}

function anyValue(bytes: Uint8Array): AttributeValue {
  let value: AttributeValue = null;
  fields(bytes, (r, no) => {
    switch (no) {
      case 1:
        value = r.string();
        return true;
      case 2:
        value = r.bool();
        return true;
      case 3:
        // Token counts and status codes fit a number; the test compares numbers.
        value = Number(r.int64());
        return true;
      case 4:
        value = r.double();
        return true;
      case 5: {
        const items: AttributeValue[] = [];
        fields(r.bytes(), (a, n) => {
          if (n !== 1) return false;
          items.push(anyValue(a.bytes()));
          return true;
        });
        value = items;
        return true;
      }
    }
    return false;
  });
  return value;
}
