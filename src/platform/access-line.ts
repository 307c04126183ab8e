import { pino, type Logger } from "pino";

/**
 * Writes access-log lines exactly as `logger.info(fields, "request")` would (same stream, level,
 * time, bindings, key order), without pino's general-purpose serialisation of the fields object:
 * the line has a fixed shape, and building it by hand took a gateway line from 8.5 µs to 4.5 µs
 * (CPU 10.7 → 6.1 µs, the write included) in the observability bench, on the gateway's hot path.
 * Values are escaped by JSON.stringify.
 */
export class AccessLineWriter {
  readonly #logger: Logger;
  readonly #stream: { write(line: string): unknown };
  readonly #time: () => string;
  readonly #start: string;
  readonly #bindings: string;

  constructor(logger: Logger) {
    // Pino's own pieces, through its exported symbols: the destination, the time function and the
    // bindings already serialised (`,"service":"warden","component":"gateway"`).
    const internals = logger as unknown as Record<symbol, unknown>;
    this.#logger = logger;
    this.#stream = internals[pino.symbols.streamSym] as { write(line: string): unknown };
    this.#time = internals[pino.symbols.timeSym] as () => string;
    this.#start = `{"level":${pino.levels.values.info}`;
    this.#bindings = internals[pino.symbols.chindingsSym] as string;
  }

  /** Whether a line would be written at all (the level allows info). */
  get enabled(): boolean {
    return this.#logger.isLevelEnabled("info");
  }

  /** `fields`: the line's own members, serialised, without braces (`"requestId":"r1","status":200`). */
  write(fields: string): void {
    this.#stream.write(`${this.#start}${this.#time()}${this.#bindings},${fields},"msg":"request"}\n`);
  }
}

/** A JSON value of a string or null. */
export function jsonText(value: string | null | undefined): string {
  return value == null ? "null" : JSON.stringify(value);
}
