import type { JsonObject } from "@bufbuild/protobuf";
import { invalidArgument } from "../../platform/errors.ts";

export interface ReadLimits {
  /** More rows than this is a 400. */
  maxRows: number;
  /** More bytes than this is a 400, and reading stops at that chunk. */
  maxBytes: number;
  /** Rows per yielded batch (the last may hold fewer). */
  batchSize: number;
  /**
   * How many times its own size a file's rows may take as JSON (default 100). A column name is
   * written in every row, and an Arrow file can point every row at one long dictionary string or
   * hold columns that take no bytes at all, so a small file could otherwise stand for a huge load.
   */
  maxExpansion?: number;
}

const DEFAULT_EXPANSION = 100;
/**
 * Rows may always take this much besides: a small file with a long header is fine, and so is a
 * modest Arrow file of booleans, which take one bit each.
 */
const EXPANSION_SLACK = 16 * 1024 * 1024;

/** Counts what is read and what it becomes; a file past either cap is a 400. */
export class Meter {
  private bytesRead = 0;
  private jsonSize = 0;
  private sourceError: unknown;
  private readonly maxBytes: number;
  private readonly expansion: number;

  constructor(limits: ReadLimits) {
    this.maxBytes = limits.maxBytes;
    this.expansion = limits.maxExpansion ?? DEFAULT_EXPANSION;
  }

  /** The source, cut off with a 400 at the first chunk that goes past maxBytes. */
  async *read(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    const iterator = source[Symbol.asyncIterator]();
    try {
      for (;;) {
        let next: IteratorResult<Uint8Array>;
        try {
          next = await iterator.next();
        } catch (err) {
          this.sourceError = err;
          throw err;
        }
        if (next.done) return;
        const chunk = next.value;
        this.bytesRead += chunk.byteLength;
        if (this.bytesRead > this.maxBytes) throw invalidArgument(`The file is larger than ${this.maxBytes} bytes`);
        if (chunk.byteLength > 0) yield chunk;
      }
    } finally {
      await iterator.return?.();
    }
  }

  /**
   * Whether the source itself failed with `err` (storage, a network): a reader that turns the
   * errors of a parser into 400s passes that one on as it is.
   */
  isSourceError(err: unknown): boolean {
    return err !== undefined && err === this.sourceError;
  }

  /**
   * Counts `size` characters of row JSON (roughly: the readers estimate, without escapes).
   * Measured against the bytes read so far, which run ahead of the rows made from them.
   */
  spend(size: number): void {
    this.jsonSize += size;
    if (this.jsonSize > this.expansion * this.bytesRead + EXPANSION_SLACK) {
      throw invalidArgument(
        `The file's rows would take more than ${this.expansion} times the file's size as JSON ` +
          "(long column names, or Arrow values repeated on every row); split or reshape the file",
      );
    }
  }
}

/** Gathers rows into batches of batchSize, and refuses the row past maxRows. */
export class RowBatches {
  private batch: JsonObject[] = [];
  private count = 0;
  private readonly maxRows: number;
  private readonly batchSize: number;

  constructor(limits: ReadLimits) {
    this.maxRows = limits.maxRows;
    this.batchSize = limits.batchSize;
  }

  /** Adds a row; the batch, when this row filled it. */
  add(row: JsonObject): JsonObject[] | undefined {
    if (++this.count > this.maxRows) throw invalidArgument(`The file has more than ${this.maxRows} rows`);
    this.batch.push(row);
    if (this.batch.length < this.batchSize) return undefined;
    const full = this.batch;
    this.batch = [];
    return full;
  }

  /** The last, partial batch, if there is one. */
  rest(): JsonObject[] | undefined {
    const rest = this.batch;
    this.batch = [];
    return rest.length > 0 ? rest : undefined;
  }
}
