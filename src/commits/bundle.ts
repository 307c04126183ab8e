import { Buffer } from "node:buffer";
import type { JsonObject } from "@bufbuild/protobuf";
import { Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { extract } from "tar-stream";

/** A bundle that could not be read: its message tells the user what to fix. */
export class BundleError extends Error {}

/** What Warden reads of a commit's bundle. It never runs anything from it. */
export interface Bundle {
  /** openlayer.json: the commit's config. */
  config: JsonObject;
  /** The datasets present, by their path in the bundle. */
  datasets: { validation?: string; training?: string };
}

export type DatasetKind = "validation" | "training";

/**
 * Takes a dataset's bytes as the bundle is read (its entry is streamed, never held whole), and
 * resolves once it has read them all; a rejection ends the reading with that error.
 */
export type DatasetReader = (kind: DatasetKind, format: "csv" | "jsonl", path: string, bytes: AsyncIterable<Uint8Array>) => Promise<void>;

/** openlayer.json is small; anything larger is not one. */
const MAX_CONFIG_BYTES = 1024 * 1024;
/** Entries read at most: a bundle is a handful of files. */
const MAX_ENTRIES = 10_000;

const datasetPattern = /^(?:[^/]+\/)?(validation|training)\/dataset\.(csv|jsonl)$/;

/** Where a path sits: at the top, or in the one folder the Python SDK's push puts everything in. */
function configPath(path: string): boolean {
  return /^(?:[^/]+\/)?openlayer\.json$/.test(path);
}

async function* withHead(first: Uint8Array, rest: AsyncIterator<Uint8Array>): AsyncGenerator<Uint8Array> {
  yield first;
  for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
}

/**
 * Reads a bundle as the Python SDK's push makes it: a tar (uncompressed, or gzipped) whose files sit
 * at the top or in one folder: `openlayer.json`, and `validation/dataset.csv` (or `.jsonl`),
 * `training/…`. Streamed: only openlayer.json is held, and it is capped; each dataset is handed to
 * `readDataset` as it comes.
 */
export async function readBundle(body: AsyncIterable<Uint8Array>, readDataset?: DatasetReader): Promise<Bundle> {
  const iterator = body[Symbol.asyncIterator]();
  // However the reading ends (a zip, a bad entry, a dataset refused), the object is let go: a
  // local file left half read stays open until a garbage collection closes it.
  try {
    return await readFrom(iterator, readDataset);
  } finally {
    await iterator.return?.();
  }
}

async function readFrom(iterator: AsyncIterator<Uint8Array>, readDataset: DatasetReader | undefined): Promise<Bundle> {
  const first = await iterator.next();
  if (first.done || first.value.length === 0) throw new BundleError("The bundle is empty");
  const head = first.value;
  if (head[0] === 0x50 && head[1] === 0x4b) throw new BundleError("The bundle is a zip archive; upload a tar or tar.gz archive instead");
  const raw = Readable.from(withHead(head, iterator));
  const source: Readable = head[0] === 0x1f && head[1] === 0x8b ? raw.pipe(createGunzip()) : raw;

  let config: JsonObject | undefined;
  let configError: string | undefined;
  const datasets: Bundle["datasets"] = {};
  let entries = 0;
  const tar = extract();
  const reading = new Promise<void>((resolve, rejectReading) => {
    // A failure stops the reading: nothing more is read from storage.
    const reject = (err: unknown) => {
      rejectReading(err);
      raw.destroy();
      source.destroy();
      tar.destroy();
    };
    tar.on("entry", (header, stream, next) => {
      entries += 1;
      if (entries > MAX_ENTRIES) {
        reject(new BundleError(`The bundle holds more than ${MAX_ENTRIES} files`));
        return;
      }
      const path = header.name.replace(/^\.\//, "");
      const dataset = datasetPattern.exec(path);
      if (dataset && header.type === "file" && datasets[dataset[1] as DatasetKind] === undefined) {
        const kind = dataset[1] as DatasetKind;
        datasets[kind] = path;
        if (readDataset) {
          readDataset(kind, dataset[2] as "csv" | "jsonl", path, stream as AsyncIterable<Uint8Array>).then(() => next(), reject);
          return;
        }
      }
      if (!configPath(path) || header.type !== "file") {
        stream.on("end", () => next());
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on("data", (data: unknown) => {
        const chunk = data as Buffer;
        size += chunk.length;
        if (size <= MAX_CONFIG_BYTES) chunks.push(chunk);
      });
      stream.on("end", () => {
        if (size > MAX_CONFIG_BYTES) configError = `${path} is larger than ${MAX_CONFIG_BYTES} bytes`;
        else {
          try {
            const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
            if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) configError = `${path} must hold a JSON object`;
            else config = parsed as JsonObject;
          } catch (err) {
            configError = `${path} is not valid JSON: ${(err as Error).message}`;
          }
        }
        next();
      });
    });
    tar.on("finish", () => resolve());
    tar.on("error", (err: Error) => reject(new BundleError(`The bundle is not a tar archive: ${err.message}`)));
    source.on("error", (err: Error) => {
      tar.destroy();
      reject(err instanceof BundleError ? err : new BundleError(`The bundle could not be read: ${err.message}`));
    });
  });
  source.pipe(tar);
  await reading;
  if (configError) throw new BundleError(configError);
  if (!config) throw new BundleError("The bundle has no openlayer.json: push a folder that holds one, with the commit's config");
  return { config, datasets };
}
