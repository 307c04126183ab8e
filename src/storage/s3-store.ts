import { Buffer } from "node:buffer";
import { GetObjectCommand, S3Client, S3ServiceException } from "@aws-sdk/client-s3";
import { createPresignedPost } from "@aws-sdk/s3-presigned-post";
import { Code, ConnectError } from "@connectrpc/connect";
import { invalidArgument, unavailable } from "../platform/errors.ts";
import type { Logger } from "../platform/logger.ts";
import { isKeyOf, MAX_KEY_BYTES, newObjectKey, objectNameOf, splitStorageUri } from "./object-keys.ts";
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
import type { S3Settings } from "./settings.ts";

/**
 * An S3-compatible bucket, through the AWS SDK. Clients upload with a presigned POST policy
 * (`url` and `fields`, the SDKs' default upload style) that pins the key and caps the size;
 * Warden reads objects back with GetObject. Keys are `<prefix><workspaceId>/<uuid>/<name>`.
 */
export class S3ObjectStore implements ObjectStore {
  readonly backend = "s3";
  readonly #client: S3Client;
  readonly #settings: S3Settings;
  readonly #urlTtlSeconds: number;
  readonly #maxObjectBytes: number;
  readonly #logger: Logger;

  constructor(settings: S3Settings, limits: { urlTtlSeconds: number; maxObjectBytes: number }, logger: Logger) {
    this.#settings = settings;
    this.#urlTtlSeconds = limits.urlTtlSeconds;
    this.#maxObjectBytes = limits.maxObjectBytes;
    this.#logger = logger;
    this.#client = new S3Client({
      region: settings.region,
      endpoint: settings.endpoint,
      forcePathStyle: settings.forcePathStyle,
      credentials: settings.credentials,
      // A connection that does not open, or a download that stalls, fails after timeoutMs; the
      // wait for an answer is bounded per call below, as a slow download must not be cut.
      requestHandler: { connectionTimeout: settings.timeoutMs, socketTimeout: settings.timeoutMs },
    });
  }

  async presign(request: PresignRequest): Promise<PresignedUpload> {
    const { bucket, prefix } = this.#settings;
    const key = prefix + newObjectKey(request.workspaceId, request.objectName, MAX_KEY_BYTES - Buffer.byteLength(prefix));
    // No network call, except that the SDK's default chain may fetch credentials (an instance role).
    const post = await this.#within(
      createPresignedPost(this.#client, {
        Bucket: bucket,
        Key: key,
        Conditions: [["content-length-range", 0, this.#maxObjectBytes]],
        Expires: this.#urlTtlSeconds,
      }),
      "signing an upload",
    );
    return { url: post.url, storageUri: `s3://${bucket}/${key}`, fields: post.fields };
  }

  async open(workspaceId: string, storageUri: string, options: OpenOptions): Promise<OpenedObject> {
    const key = this.#keyOf(workspaceId, storageUri);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.#settings.timeoutMs);
    let output;
    try {
      // The deadline covers the wait for the answer only; the caller's signal covers the download too.
      output = await this.#client.send(new GetObjectCommand({ Bucket: this.#settings.bucket, Key: key }), {
        abortSignal: options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal,
      });
    } catch (err) {
      throw this.#failure(err, options.signal, deadline.signal);
    } finally {
      clearTimeout(timer);
    }
    const body = output.Body as (AsyncIterable<Uint8Array> & { destroy?(): void }) | undefined;
    const size = output.ContentLength ?? 0;
    if (size > options.maxBytes) {
      body?.destroy?.();
      throw objectTooLarge(options.maxBytes);
    }
    return { objectName: objectNameOf(key.slice(this.#settings.prefix.length)), size, body: capped(body ?? emptyBody(), options.maxBytes) };
  }

  async close(): Promise<void> {
    this.#client.destroy();
  }

  /** The bucket key of a storage URI, if it is one of this workspace's; else a 400 or a 404. */
  #keyOf(workspaceId: string, storageUri: string): string {
    const { scheme, rest } = splitStorageUri(storageUri);
    if (scheme !== "s3") throw otherScheme(scheme, "s3");
    const slash = rest.indexOf("/");
    if (slash <= 0 || slash === rest.length - 1) throw invalidArgument("storageUri must be s3://<bucket>/<key>");
    const bucket = rest.slice(0, slash);
    const key = rest.slice(slash + 1);
    const { prefix } = this.#settings;
    if (bucket !== this.#settings.bucket || !key.startsWith(prefix) || !isKeyOf(key.slice(prefix.length), workspaceId)) {
      throw objectNotFound();
    }
    return key;
  }

  #failure(err: unknown, callerSignal: AbortSignal | undefined, deadline: AbortSignal): ConnectError {
    if (err instanceof S3ServiceException && (err.name === "NoSuchKey" || err.$metadata.httpStatusCode === 404)) return objectNotFound();
    if (callerSignal?.aborted) return new ConnectError("The read of the object was cancelled", Code.Canceled);
    // The deadline, or the SDK's own connect and stall timeouts, which end the call first at times.
    if (deadline.aborted || (err as Error).name === "TimeoutError") {
      this.#logger.warn({ err, timeoutMs: this.#settings.timeoutMs }, "storage: S3 did not answer in time");
      return unavailable("The object store did not answer in time. Retry in a few seconds.");
    }
    this.#logger.error({ err }, "storage: S3 call failed");
    return unavailable("The object store is unavailable. Retry in a few seconds.");
  }

  /** `work`, or unavailable once the S3 deadline has passed; the work itself cannot be stopped. */
  async #within<T>(work: Promise<T>, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took more than ${this.#settings.timeoutMs} ms`)), this.#settings.timeoutMs);
    });
    try {
      return await Promise.race([work, late]);
    } catch (err) {
      this.#logger.error({ err }, `storage: ${what} failed`);
      throw unavailable("The object store is unavailable. Retry in a few seconds.");
    } finally {
      clearTimeout(timer);
    }
  }
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}
