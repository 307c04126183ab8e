/** Where uploads are kept, and their bounds (WARDEN_STORAGE_* and WARDEN_S3_*, src/platform/config.ts). */
export interface StorageSettings {
  /** Warden's own disk under the data dir, or an S3-compatible bucket. */
  backend: "local" | "s3";
  /** How long a presigned upload URL stays valid. */
  urlTtlSeconds: number;
  /** The largest object one upload may make; a larger upload is refused (413 on Warden's own disk). */
  maxObjectBytes: number;
  /** Set when `backend` is "s3". */
  s3: S3Settings | undefined;
}

export interface S3Settings {
  bucket: string;
  region: string;
  /** An S3-compatible server (MinIO, Ceph, R2…); absent: AWS. */
  endpoint: string | undefined;
  /** Both or neither; neither: the AWS SDK's default chain (environment, profile, instance role). */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  /** `<endpoint>/<bucket>/<key>` instead of `<bucket>.<endpoint>/<key>`, as most S3-compatible servers want. */
  forcePathStyle: boolean;
  /** Put before every key Warden makes: empty, or ending in "/". */
  prefix: string;
  /**
   * The deadline of one S3 call until its answer starts (retries included), of opening a
   * connection, and of a download that stalls; and of finding credentials for a presigned URL.
   */
  timeoutMs: number;
}

export const defaultStorageSettings = {
  urlTtlSeconds: 3600,
  maxObjectBytes: 1024 * 1024 * 1024,
  s3Region: "us-east-1",
  s3TimeoutMs: 30_000,
} as const;

/** S3 takes at most 5 GiB in one POST; Warden's own disk is held to the same. */
export const MAX_OBJECT_BYTES_LIMIT = 5 * 1024 * 1024 * 1024;

/** A week: an upload URL is meant for the upload that follows it, not to be kept. */
export const MAX_URL_TTL_SECONDS = 7 * 24 * 3600;
