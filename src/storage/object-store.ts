import { invalidArgument, notFound } from "../platform/errors.ts";

/** Where and how a client uploads one new object: CreatePresignedUrl's answer. */
export interface PresignedUpload {
  url: string;
  /** How other calls name the object: local://<key> or s3://<bucket>/<key>. */
  storageUri: string;
  /** Form fields to send before the file (S3's POST policy); empty for Warden's own disk. */
  fields: Record<string, string>;
}

export interface PresignRequest {
  /** The caller's workspace: the only one that can open the object. */
  workspaceId: string;
  /** What the caller calls the file; validated and sanitised into the key (object-keys.ts). */
  objectName: string;
  /** The base of absolute Warden URLs for this call (src/platform/urls.ts baseUrlOf). */
  baseUrl: string;
}

export interface OpenOptions {
  /** An object larger than this is refused before a byte of it is read. */
  maxBytes: number;
  /** Stops the download, and the body's iteration with it. */
  signal?: AbortSignal;
}

/** An uploaded object, opened for reading. */
export interface OpenedObject {
  /** The sanitised name at the end of the key, such as "batch_data_1718031233.4_<id>.arrow". */
  objectName: string;
  size: number;
  /** The bytes, streamed: never held whole. Never yields more than `maxBytes`. */
  body: AsyncIterable<Uint8Array>;
}

/**
 * Where uploads are kept: Warden's own disk (local-store.ts) or an S3-compatible bucket
 * (s3-store.ts), chosen by configuration (storage.ts). Objects are private to the workspace
 * that asked for the upload URL.
 */
export interface ObjectStore {
  readonly backend: "local" | "s3";
  /** A new key for the object and a signed, expiring way to upload it. 400 for a bad objectName. */
  presign(request: PresignRequest): Promise<PresignedUpload>;
  /**
   * Opens an uploaded object for `workspaceId`. A URI of this store whose key is not under that
   * workspace is "Object not found", as a missing object is (404); a URI of another scheme, or
   * one that does not parse, is a 400; an object over `maxBytes` is a 400 that names the cap.
   */
  open(workspaceId: string, storageUri: string, options: OpenOptions): Promise<OpenedObject>;
  close(): Promise<void>;
}

export const objectNotFound = () => notFound("Object not found");

export const objectTooLarge = (maxBytes: number) => invalidArgument(`The object is larger than ${maxBytes} bytes, the most this server reads`);

/** The scheme a store does not keep objects under: a 400 that says which one it does. */
export function otherScheme(scheme: string, ours: string) {
  return invalidArgument(`storageUri has the scheme "${scheme}", but this server keeps uploads at ${ours}:// URIs`);
}

/**
 * The body, stopped with objectTooLarge once it passes `maxBytes`: a reader gets no more than it
 * asked for even if the object grew after its size was read.
 */
export async function* capped(body: AsyncIterable<Uint8Array>, maxBytes: number): AsyncGenerator<Uint8Array> {
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) throw objectTooLarge(maxBytes);
    yield chunk;
  }
}
