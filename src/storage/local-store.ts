import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { mkdir, open, readdir, rename, rm, stat, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { isKeyOf, newObjectKey, objectNameOf, splitStorageUri } from "./object-keys.ts";
import {
  capped,
  objectNotFound,
  objectTooLarge,
  otherScheme,
  type ObjectStore,
  type OpenedObject,
  type OpenOptions,
  type PresignedUpload,
  type PresignRequest,
} from "./object-store.ts";
import type { UploadUrls } from "./upload-urls.ts";

/** An upload that passed the store's size cap; the upload handler answers it with 413. */
export class UploadTooLarge extends Error {
  readonly maxBytes: number;

  constructor(maxBytes: number) {
    super(`The upload is larger than ${maxBytes} bytes`);
    this.maxBytes = maxBytes;
  }
}

/** An upload written in full to a temporary file, not yet an object. */
export interface StagedUpload {
  size: number;
  /** Renames it into place as `key`: the object appears whole, or not at all. */
  commit(key: string): Promise<void>;
  discard(): Promise<void>;
}

/** Temporary files of uploads; beside the objects, so that the rename into place is atomic. */
const TEMP_DIR = ".uploading";

/** A temporary file older than this is left from a process that died mid-upload. */
const STALE_TEMP_MS = 24 * 3600 * 1000;

/**
 * Warden's own disk: `<dataDir>/storage/<key>`. Upload URLs point at Warden's API port
 * (upload-handler.ts), signed by UploadUrls. Every process that serves them must see the same
 * folder (one host, or a shared volume) and have the same master key.
 */
export class LocalObjectStore implements ObjectStore {
  readonly backend = "local";
  readonly #root: string;
  readonly #temp: string;
  readonly #urls: UploadUrls;
  readonly maxObjectBytes: number;

  constructor(options: { root: string; urls: UploadUrls; maxObjectBytes: number }) {
    this.#root = options.root;
    this.#temp = path.join(options.root, TEMP_DIR);
    this.#urls = options.urls;
    this.maxObjectBytes = options.maxObjectBytes;
  }

  async presign(request: PresignRequest): Promise<PresignedUpload> {
    const key = newObjectKey(request.workspaceId, request.objectName);
    return { url: this.#urls.make(request.baseUrl, key), storageUri: `local://${key}`, fields: {} };
  }

  async open(workspaceId: string, storageUri: string, options: OpenOptions): Promise<OpenedObject> {
    const { scheme, rest: key } = splitStorageUri(storageUri);
    if (scheme !== "local") throw otherScheme(scheme, "local");
    if (!isKeyOf(key, workspaceId)) throw objectNotFound();
    let handle: FileHandle;
    try {
      handle = await open(this.#pathOf(key), "r");
    } catch (err) {
      if (isMissing(err)) throw objectNotFound();
      throw err;
    }
    let size: number;
    try {
      const info = await handle.stat();
      if (!info.isFile()) throw objectNotFound();
      if (info.size > options.maxBytes) throw objectTooLarge(options.maxBytes);
      size = info.size;
    } catch (err) {
      await handle.close();
      throw err;
    }
    // The stream closes the file when it ends, fails or is aborted.
    const stream = handle.createReadStream({ signal: options.signal, highWaterMark: 64 * 1024 });
    return { objectName: objectNameOf(key), size, body: capped(stream, options.maxBytes) };
  }

  async close(): Promise<void> {}

  /**
   * Writes an upload to a temporary file, and fails with UploadTooLarge as soon as it passes the
   * cap. Whatever fails, the temporary file is gone before the promise settles.
   */
  async stage(source: AsyncIterable<Uint8Array>): Promise<StagedUpload> {
    await mkdir(this.#temp, { recursive: true });
    const temp = path.join(this.#temp, randomUUID());
    // Opened before the first byte: a stream that opens its file itself may create it after a
    // failure has already removed it.
    const sink = (await open(temp, "wx", 0o600)).createWriteStream();
    const maxBytes = this.maxObjectBytes;
    let size = 0;
    try {
      await pipeline(
        source,
        async function* (chunks: AsyncIterable<Uint8Array>) {
          for await (const chunk of chunks) {
            size += chunk.length;
            if (size > maxBytes) throw new UploadTooLarge(maxBytes);
            yield chunk;
          }
        },
        sink,
      );
    } catch (err) {
      if (!sink.closed) await once(sink, "close").catch(() => undefined);
      await rm(temp, { force: true });
      throw err;
    }
    return {
      size,
      commit: async (key) => {
        const target = this.#pathOf(key);
        try {
          await mkdir(path.dirname(target), { recursive: true });
          await rename(temp, target);
        } catch (err) {
          await rm(temp, { force: true });
          throw err;
        }
      },
      discard: () => rm(temp, { force: true }),
    };
  }

  /** Removes what uploads of dead processes left; a live upload is never that old (request timeouts). */
  async removeStaleTempFiles(now = Date.now()): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.#temp);
    } catch (err) {
      if (isMissing(err)) return;
      throw err;
    }
    for (const name of names) {
      const file = path.join(this.#temp, name);
      const info = await stat(file).catch(() => undefined);
      if (info && now - info.mtimeMs > STALE_TEMP_MS) await rm(file, { force: true });
    }
  }

  /** Only for keys that isKeyOf accepted, or that newObjectKey made: no segment is "..". */
  #pathOf(key: string): string {
    return path.join(this.#root, ...key.split("/"));
  }
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}
