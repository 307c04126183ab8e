import { Buffer } from "node:buffer";
import type { AttributeValue, Attributes, HrTime, SpanContext } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";

/**
 * Spans as an OTLP ExportTraceServiceRequest (opentelemetry-proto, collector/trace/v1), in protobuf:
 * the bytes the SDK's own serializer (@opentelemetry/otlp-transformer) writes, field for field and
 * in its order, so that any collector reads them alike (test/otlp-encoding.test.ts compares the two).
 *
 * Why Warden encodes: with every request sampled, the SDK's serializer was half of tracing's CPU
 * (a profile of two spans a request: 48% of busy time in `serializeSpan` and below). It writes
 * strings a character at a time, and sizes every message in a first pass. This writes strings,
 * IDs and lengths with Buffer's native writes in one pass, and encodes each attribute key, each
 * attribute whose value repeats, and the resource and scope, once. Measured in
 * bench/gateway/observability.ts.
 */

const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;

/** opentelemetry-proto's SpanFlags: the context's remoteness is known, and whether it is remote. */
const FLAGS_HAS_IS_REMOTE = 0x100;
const FLAGS_IS_REMOTE = 0x200;

/** A protobuf writer over one growing buffer. */
class Writer {
  buf: Buffer;
  pos = 0;

  constructor(bytes = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(bytes);
  }

  ensure(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  /** A non-negative integer below 2^53. */
  varint(value: number): void {
    this.ensure(10);
    if (value < 0x80) {
      this.buf[this.pos++] = value;
      return;
    }
    const buf = this.buf;
    let pos = this.pos;
    while (value >= 0x80) {
      buf[pos++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    buf[pos++] = value;
    this.pos = pos;
  }

  tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  /** A signed 64-bit integer as an int64 varint: negative numbers take ten bytes, two's complement. */
  int64(value: number): void {
    if (value >= 0) return this.varint(value);
    let v = BigInt.asUintN(64, BigInt(value));
    this.ensure(10);
    while (v >= 0x80n) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.pos++] = Number(v);
  }

  string(text: string): void {
    // Up to three bytes per UTF-16 unit: a string that cannot reach 128 bytes has a one-byte length.
    if (text.length < 43) {
      this.ensure(1 + text.length * 3);
      // Most are short and ASCII (names, models, IDs): copied here, a byte a character, they cost
      // less than the call into Buffer.write, which takes the rest.
      const buf = this.buf;
      const start = this.pos + 1;
      let i = 0;
      for (; i < text.length; i++) {
        const code = text.charCodeAt(i);
        if (code > 0x7f) break;
        buf[start + i] = code;
      }
      const n = i === text.length ? i : this.buf.write(text, start, "utf8");
      this.buf[this.pos] = n;
      this.pos += 1 + n;
      return;
    }
    const n = Buffer.byteLength(text, "utf8");
    this.varint(n);
    this.ensure(n);
    this.pos += this.buf.write(text, this.pos, "utf8");
  }

  /** A trace or span ID, given in hex, as its bytes. */
  hexBytes(hex: string): void {
    this.ensure(1 + (hex.length >>> 1));
    const n = this.buf.write(hex, this.pos + 1, hex.length >>> 1, "hex");
    this.buf[this.pos] = n;
    this.pos += 1 + n;
  }

  bytes(bytes: Uint8Array): void {
    this.varint(bytes.length);
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  fixed32(value: number): void {
    this.ensure(4);
    this.pos = this.buf.writeUInt32LE(value >>> 0, this.pos);
  }

  double(value: number): void {
    this.ensure(8);
    this.pos = this.buf.writeDoubleLE(value, this.pos);
  }

  /**
   * An HrTime ([seconds, nanoseconds]) as fixed64 nanoseconds. Seconds × 10^9 passes 2^53, so the
   * seconds are split at 2^16, where each part's product stays exact in a double, and the two
   * 32-bit words are summed from the parts with a carry.
   */
  hrTime(time: HrTime): void {
    const seconds = time[0];
    const low = (seconds & 0xffff) * 1e9 + time[1]; // < 2^47
    const high = ((seconds / 0x10000) >>> 0) * 1e9; // to be × 2^16; < 2^46
    // ToInt32 (of `&`, `>>>`) takes an exact integer modulo 2^32.
    const lowWord = (low >>> 0) + (high & 0xffff) * 0x10000;
    const highWord = Math.floor(low / 0x100000000) + Math.floor(high / 0x10000) + (lowWord > 0xffffffff ? 1 : 0);
    this.ensure(8);
    this.buf.writeUInt32LE(lowWord >>> 0, this.pos);
    this.buf.writeUInt32LE(highWord >>> 0, this.pos + 4);
    this.pos += 8;
  }

  raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /**
   * Starts a length-delimited message: `reserve` bytes are kept for its length, the size it is
   * expected to need; `end` moves the message if its length needs more or fewer.
   */
  begin(reserve: number): number {
    this.ensure(reserve);
    const start = this.pos;
    this.pos += reserve;
    return start;
  }

  end(start: number, reserve: number): void {
    const length = this.pos - start - reserve;
    const needed = varintSize(length);
    if (needed !== reserve) {
      this.ensure(needed - reserve);
      this.buf.copyWithin(start + needed, start + reserve, this.pos);
      this.pos += needed - reserve;
    }
    let at = start;
    let value = length;
    while (value >= 0x80) {
      this.buf[at++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    this.buf[at] = value;
  }

  /** The bytes written since `start`, copied. */
  copy(start: number): Uint8Array {
    return new Uint8Array(this.buf.subarray(start, this.pos));
  }
}

function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value >>>= 7;
    size += 1;
  }
  return size;
}

/**
 * Attribute keys come from Warden's code, a few dozen names: each key's `KeyValue.key` field is
 * encoded once. Most of a gateway span's values repeat from one request to the next, too (the
 * model, the provider, the workspace, the endpoint, the status): a primitive value written twice
 * in a row under one key keeps its whole `KeyValue` (length included), and later spans copy it
 * while the value stays the same. A value that changes every time (a request ID, a token count)
 * costs one comparison and keeps nothing. The bound keeps a stray caller-named key from growing
 * the map without end.
 */
const MAX_CACHED_KEYS = 1024;

interface KeyState {
  /** The `KeyValue.key` field. */
  key: Uint8Array;
  /** The value written last under this key. */
  last: AttributeValue | undefined;
  /** The whole `KeyValue` of `last`, length first, once it has been written twice in a row. */
  keyValue: Uint8Array | undefined;
}
const keyStates = new Map<string, KeyState>();

/**
 * The key's state, made the first time while there is room (its field encoded at the end of `w`,
 * copied, and taken back); undefined past the bound.
 */
function keyState(w: Writer, key: string): KeyState | undefined {
  let state = keyStates.get(key);
  if (state === undefined && keyStates.size < MAX_CACHED_KEYS) {
    const start = w.pos;
    w.tag(1, LEN);
    w.string(key);
    keyStates.set(key, (state = { key: w.copy(start), last: undefined, keyValue: undefined }));
    w.pos = start;
  }
  return state;
}

/** Writes the field of `key`: its bytes kept from the first time, or `write`'s, then kept. */
function writeKept<K extends object>(w: Writer, kept: WeakMap<K, Uint8Array>, key: K, write: () => void): void {
  const field = kept.get(key);
  if (field !== undefined) return w.raw(field);
  const start = w.pos;
  write();
  kept.set(key, w.copy(start));
}

function writeAttributes(w: Writer, attributes: Attributes, field: number): void {
  for (const key in attributes) {
    if (!Object.prototype.hasOwnProperty.call(attributes, key)) continue;
    const value = attributes[key];
    const state = keyState(w, key);
    w.tag(field, LEN);
    if (state !== undefined && state.keyValue !== undefined && state.last === value) {
      w.raw(state.keyValue);
      continue;
    }
    const keyValue = w.begin(1);
    if (state !== undefined) w.raw(state.key);
    else {
      w.tag(1, LEN);
      w.string(key);
    }
    w.tag(2, LEN);
    const start = w.begin(1);
    writeAnyValue(w, value);
    w.end(start, 1);
    w.end(keyValue, 1);
    if (state === undefined) continue;
    const repeated = state.last === value && (typeof value === "string" || typeof value === "number" || typeof value === "boolean");
    state.keyValue = repeated ? w.copy(keyValue) : undefined;
    state.last = value;
  }
}

const MIN_INT64 = -(2 ** 63);
const MAX_INT64 = 2 ** 63;

/** An AnyValue's fields; nothing for null or undefined (an empty AnyValue), as the SDK writes it. */
function writeAnyValue(w: Writer, value: AttributeValue | null | undefined | Uint8Array | Record<string, unknown>): void {
  if (typeof value === "string") {
    w.tag(1, LEN);
    w.string(value);
  } else if (typeof value === "boolean") {
    w.tag(2, VARINT);
    w.varint(value ? 1 : 0);
  } else if (typeof value === "number") {
    if (Number.isInteger(value) && value >= MIN_INT64 && value < MAX_INT64) {
      w.tag(3, VARINT);
      w.int64(value);
    } else {
      w.tag(4, I64);
      w.double(value);
    }
  } else if (value instanceof Uint8Array) {
    w.tag(7, LEN);
    w.bytes(value);
  } else if (Array.isArray(value)) {
    w.tag(5, LEN);
    const array = w.begin(1);
    for (const item of value as unknown[]) {
      w.tag(1, LEN);
      const itemStart = w.begin(1);
      writeAnyValue(w, item as AttributeValue);
      w.end(itemStart, 1);
    }
    w.end(array, 1);
  } else if (typeof value === "object" && value !== null) {
    // Not an attribute value by the API's types, but the SDK writes an object as a key-value list.
    const object = value as Record<string, unknown>;
    w.tag(6, LEN);
    const list = w.begin(1);
    for (const key in object) {
      if (!Object.prototype.hasOwnProperty.call(object, key)) continue;
      w.tag(1, LEN);
      const keyValue = w.begin(1);
      w.tag(1, LEN);
      w.string(key);
      w.tag(2, LEN);
      const inner = w.begin(1);
      writeAnyValue(w, object[key] as AttributeValue);
      w.end(inner, 1);
      w.end(keyValue, 1);
    }
    w.end(list, 1);
  }
}

function spanFlags(traceFlags: number, isRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | FLAGS_HAS_IS_REMOTE | (isRemote ? FLAGS_IS_REMOTE : 0);
}

/** trace_id, span_id and trace_state: fields 1 to 3 of a Span and of a Link alike. */
function writeContext(w: Writer, context: SpanContext): void {
  w.tag(1, LEN);
  w.hexBytes(context.traceId);
  w.tag(2, LEN);
  w.hexBytes(context.spanId);
  const traceState = context.traceState?.serialize();
  if (traceState) {
    w.tag(3, LEN);
    w.string(traceState);
  }
}

function writeLink(w: Writer, context: SpanContext, attributes: Attributes | undefined, dropped: number | undefined): void {
  writeContext(w, context);
  if (attributes) writeAttributes(w, attributes, 4);
  w.tag(5, VARINT);
  w.varint(dropped ?? 0);
  w.tag(6, I32);
  w.fixed32(spanFlags(context.traceFlags, context.isRemote));
}

function writeSpan(w: Writer, span: ReadableSpan): void {
  const context = span.spanContext();
  writeContext(w, context);
  const parent = span.parentSpanContext;
  if (parent?.spanId) {
    w.tag(4, LEN);
    w.hexBytes(parent.spanId);
  }
  w.tag(5, LEN);
  w.string(span.name);
  // The API's kinds start at INTERNAL = 0; the protocol's at UNSPECIFIED = 0, INTERNAL = 1.
  if (span.kind != null) {
    w.tag(6, VARINT);
    w.varint(span.kind + 1);
  }
  w.tag(7, I64);
  w.hrTime(span.startTime);
  w.tag(8, I64);
  w.hrTime(span.endTime);
  writeAttributes(w, span.attributes, 9);
  w.tag(10, VARINT);
  w.varint(span.droppedAttributesCount);
  for (const event of span.events) {
    w.tag(11, LEN);
    const start = w.begin(1);
    w.tag(1, I64);
    w.hrTime(event.time);
    w.tag(2, LEN);
    w.string(event.name);
    if (event.attributes) writeAttributes(w, event.attributes, 3);
    w.tag(4, VARINT);
    w.varint(event.droppedAttributesCount ?? 0);
    w.end(start, 1);
  }
  w.tag(12, VARINT);
  w.varint(span.droppedEventsCount);
  for (const link of span.links) {
    w.tag(13, LEN);
    const start = w.begin(1);
    writeLink(w, link.context, link.attributes, link.droppedAttributesCount);
    w.end(start, 1);
  }
  w.tag(14, VARINT);
  w.varint(span.droppedLinksCount);
  w.tag(15, LEN);
  const status = w.begin(1);
  if (span.status.message) {
    w.tag(2, LEN);
    w.string(span.status.message);
  }
  w.tag(3, VARINT);
  w.varint(span.status.code);
  w.end(status, 1);
  w.tag(16, I32);
  w.fixed32(spanFlags(context.traceFlags, parent?.isRemote));
}

type Resource = ReadableSpan["resource"];
type Scope = ReadableSpan["instrumentationScope"];

/** A resource's `Resource` field and a scope's `InstrumentationScope` field, encoded once each. */
const encodedResources = new WeakMap<Resource, Uint8Array>();
const encodedScopes = new WeakMap<Scope, Uint8Array>();

function writeResource(w: Writer, resource: Resource): void {
  writeKept(w, encodedResources, resource, () => {
    w.tag(1, LEN);
    const body = w.begin(1);
    writeAttributes(w, resource.attributes, 1);
    w.tag(2, VARINT);
    w.varint(0);
    w.end(body, 1);
  });
}

function writeScope(w: Writer, scope: Scope): void {
  writeKept(w, encodedScopes, scope, () => {
    w.tag(1, LEN);
    const body = w.begin(1);
    w.tag(1, LEN);
    w.string(scope.name);
    if (scope.version) {
      w.tag(2, LEN);
      w.string(scope.version);
    }
    w.end(body, 1);
  });
}

/** The writer a batch is framed in, reused between exports (an export copies its bytes out). */
const framing = new Writer();
/** Room kept for the length of a batch's messages (up to 2 MiB); larger ones are moved once. */
const BATCH_RESERVE = 3;
/** Room kept for the length of a span (up to 16 KiB). */
const SPAN_RESERVE = 2;
/** A batch's first buffer for one scope's spans: a gateway request's two spans take about 1 KiB. */
const GROUP_BYTES = 16 * 1024;

/** One resource and scope's spans in a batch, each already its ScopeSpans `spans` field. */
interface SpanGroup {
  resource: Resource;
  scope: Scope;
  spans: Writer;
}

/**
 * Spans encoded as they end, for one export: the span queue holds these bytes rather than the
 * span objects, so that a span dies young (promoted, queued spans were the collector's work) and
 * nothing but bytes waits for the export. `encode` frames them by resource, then by scope, in the
 * order first met, as the SDK's serializer does.
 */
export class SpanBatch {
  count = 0;
  readonly #groups: SpanGroup[] = [];
  #last: SpanGroup | undefined;

  add(span: ReadableSpan): void {
    let group = this.#last;
    if (group === undefined || group.resource !== span.resource || group.scope !== span.instrumentationScope) group = this.#groupOf(span);
    const w = group.spans;
    w.tag(2, LEN);
    const start = w.begin(SPAN_RESERVE);
    writeSpan(w, span);
    w.end(start, SPAN_RESERVE);
    this.count += 1;
  }

  /** The batch as the body of an OTLP/HTTP protobuf export, in a buffer of its own (it can be transferred). */
  encode(): Uint8Array {
    const w = framing;
    w.pos = 0;
    const resources = [...new Set(this.#groups.map((g) => g.resource))];
    for (const resource of resources) {
      w.tag(1, LEN);
      const resourceSpans = w.begin(BATCH_RESERVE);
      writeResource(w, resource);
      for (const group of this.#groups) {
        if (group.resource !== resource) continue;
        w.tag(2, LEN);
        const scopeSpans = w.begin(BATCH_RESERVE);
        writeScope(w, group.scope);
        w.raw(group.spans.buf.subarray(0, group.spans.pos));
        if (group.scope.schemaUrl) {
          w.tag(3, LEN);
          w.string(group.scope.schemaUrl);
        }
        w.end(scopeSpans, BATCH_RESERVE);
      }
      if (resource.schemaUrl) {
        w.tag(3, LEN);
        w.string(resource.schemaUrl);
      }
      w.end(resourceSpans, BATCH_RESERVE);
    }
    const bytes = w.copy(0);
    // A batch far larger than usual should not keep its buffer for the life of the process.
    if (w.buf.length > 4 * 1024 * 1024) w.buf = Buffer.allocUnsafe(64 * 1024);
    return bytes;
  }

  #groupOf(span: ReadableSpan): SpanGroup {
    const resource = span.resource;
    const scope = span.instrumentationScope;
    let group = this.#groups.find((g) => g.resource === resource && g.scope === scope);
    if (group === undefined) this.#groups.push((group = { resource, scope, spans: new Writer(GROUP_BYTES) }));
    this.#last = group;
    return group;
  }
}
