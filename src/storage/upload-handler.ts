import busboy from "busboy";
import { Transform } from "node:stream";
import { Code, ConnectError } from "@connectrpc/connect";
import { asConnectError, invalidArgument, permissionDenied } from "../platform/errors.ts";
import { respondJson, type NodeServerRequest, type NodeServerResponse } from "../platform/http.ts";
import type { Logger } from "../platform/logger.ts";
import { sendError } from "../rest/facade.ts";
import { isKeyOf } from "./object-keys.ts";
import { UploadTooLarge, type LocalObjectStore, type StagedUpload } from "./local-store.ts";
import { UPLOAD_PATH_PREFIX, type UploadUrls } from "./upload-urls.ts";

/** What a multipart body may carry besides the file: boundaries, part headers, a few small fields. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/**
 * After an early answer (403, 413, …) the rest of the body is read and dropped, up to this much,
 * so that a client that sends its whole body before it reads (Python's requests) gets the answer
 * instead of a reset; past it the connection is closed.
 */
const DRAIN_BYTES = 1024 * 1024;

/**
 * Uploads to Warden's own disk, at the URLs that CreatePresignedUrl signs
 * (`/v1/storage/objects/<key>?expires=…&signature=…`), on the API port, with no API key: the
 * signature is the authorisation. Two styles: the Openlayer SDKs' `local` upload, a multipart
 * POST with the file in a part named `file` (other parts are ignored), and a PUT of the raw
 * bytes. Both stream to a temporary file that is renamed into place once the whole request has
 * arrived. Resolves false for any other path, so the next handler can answer it.
 */
export function createUploadHandler(store: LocalObjectStore, urls: UploadUrls, logger: Logger) {
  return async function handleUpload(req: NodeServerRequest, res: NodeServerResponse): Promise<boolean> {
    const url = URL.parse(req.url ?? "/", "http://placeholder");
    if (!url?.pathname.startsWith(UPLOAD_PATH_PREFIX)) return false;
    const method = (req.method ?? "GET").toUpperCase();
    if (method !== "POST" && method !== "PUT") {
      res.setHeader("allow", "POST, PUT");
      sendError(res, invalidArgument(`${method} is not allowed on an upload URL; use POST or PUT`), 405);
      drain(req);
      return true;
    }
    try {
      const key = url.pathname.slice(UPLOAD_PATH_PREFIX.length);
      urls.check(key, url.searchParams);
      // Signed keys are keys Warden made; checked again because the key becomes a path.
      if (!isKeyOf(key, key.slice(0, key.indexOf("/")))) throw permissionDenied("The upload URL's signature is not valid");
      const staged = method === "PUT" ? await receiveRaw(req, store) : await receiveMultipart(req, store);
      await staged.commit(key);
      logger.info({ key, size: staged.size }, "storage: object uploaded");
      respondJson(res, 200, { success: true, storageUri: `local://${key}`, size: staged.size });
    } catch (err) {
      answerError(req, res, err, logger);
    }
    return true;
  };
}

async function receiveRaw(req: NodeServerRequest, store: LocalObjectStore): Promise<StagedUpload> {
  if (declaredLength(req) > store.maxObjectBytes) throw new UploadTooLarge(store.maxObjectBytes);
  // Not destroyed when the store stops reading: the request must live on to carry the answer.
  return store.stage(req.iterator({ destroyOnReturn: false }));
}

async function receiveMultipart(req: NodeServerRequest, store: LocalObjectStore): Promise<StagedUpload> {
  const maxBytes = store.maxObjectBytes;
  if (declaredLength(req) > maxBytes + MULTIPART_OVERHEAD_BYTES) throw new UploadTooLarge(maxBytes);
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      // One byte more than the cap reaches the store, which refuses it: busboy would cut silently.
      limits: { fileSize: maxBytes + 1, fieldSize: 16 * 1024, fields: 100, parts: 101, headerPairs: 100 },
    });
  } catch (err) {
    throw invalidArgument(`Send the object as multipart/form-data with the file in a part named "file", or PUT its bytes (${(err as Error).message})`);
  }
  // The whole body is capped too, not only the file: parts that are not "file" are read and dropped.
  let total = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      total += chunk.length;
      if (total > maxBytes + MULTIPART_OVERHEAD_BYTES) done(new UploadTooLarge(maxBytes));
      else done(null, chunk);
    },
  });
  let staging: Promise<StagedUpload> | undefined;
  const parsed = new Promise<void>((resolve, reject) => {
    parser.on("file", (name, file) => {
      if (name !== "file" || staging) {
        file.resume();
        return;
      }
      // The store attaches to the file after an await: until then its errors must not go unheard.
      file.on("error", () => {});
      staging = store.stage(file);
      staging.catch(reject);
    });
    parser.on("error", (err) => reject(invalidArgument(`The multipart body is malformed: ${(err as Error).message}`)));
    parser.on("finish", resolve);
    counter.on("error", reject);
    req.on("error", reject);
  });
  req.pipe(counter).pipe(parser);
  try {
    await parsed;
    if (!staging) throw invalidArgument('The multipart body has no file in a part named "file"');
    return await staging;
  } catch (err) {
    req.unpipe(counter);
    parser.destroy();
    // Whatever the file part had written goes, before anyone is told.
    const staged = await staging?.catch(() => undefined);
    await staged?.discard();
    throw err;
  }
}

function declaredLength(req: NodeServerRequest): number {
  const value = Number(req.headers["content-length"] ?? 0);
  return Number.isFinite(value) ? value : 0;
}

function answerError(req: NodeServerRequest, res: NodeServerResponse, err: unknown, logger: Logger): void {
  let error: ConnectError;
  let status: number | undefined;
  if (err instanceof UploadTooLarge) {
    error = new ConnectError(err.message, Code.ResourceExhausted);
    status = 413;
  } else {
    error = asConnectError(err);
    if (error.code === Code.Internal) {
      // A client that went away mid-upload is not our failure.
      if (req.destroyed || res.destroyed) logger.info({ err }, "storage: upload cut off by the client");
      else logger.error({ err }, "storage: upload failed");
    }
  }
  if (!res.headersSent && !res.destroyed) {
    // A body declared far larger than what is left to drain is not read: the connection closes after the answer.
    if (!req.complete && req.httpVersionMajor === 1 && declaredLength(req) > DRAIN_BYTES) res.setHeader("connection", "close");
    sendError(res, error, status);
  }
  drain(req);
}

/** Reads and drops the rest of a body that was answered early; closes the connection past DRAIN_BYTES. */
function drain(req: NodeServerRequest): void {
  if (req.complete || req.destroyed) return;
  let left = DRAIN_BYTES;
  req.on("error", () => {});
  req.on("data", (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) req.destroy();
  });
  req.resume();
}
