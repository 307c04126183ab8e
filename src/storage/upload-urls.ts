import { Buffer } from "node:buffer";
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { permissionDenied } from "../platform/errors.ts";

/** Where uploads to Warden's own disk go: this prefix, then the object's key. */
export const UPLOAD_PATH_PREFIX = "/v1/storage/objects/";

/** HKDF's `info`: the purpose the derived key serves, so that it serves no other. */
const KEY_PURPOSE = "warden/storage/upload-url/v1";

/**
 * Signs and checks the upload URLs of Warden's own disk. The HMAC key is derived (HKDF-SHA256)
 * from the master key, so every process with the same master key accepts the URLs of every
 * other, and nothing is stored. A URL signs its key and its expiry: changing either, the
 * workspace in the key included, breaks the signature.
 */
export class UploadUrls {
  readonly #key: Buffer;
  readonly #ttlSeconds: number;

  constructor(masterKey: Buffer, ttlSeconds: number) {
    this.#key = Buffer.from(hkdfSync("sha256", masterKey, Buffer.alloc(0), KEY_PURPOSE, 32));
    this.#ttlSeconds = ttlSeconds;
  }

  /** `<base>/v1/storage/objects/<key>?expires=<unix s>&signature=<hmac>`; keys need no escaping. */
  make(baseUrl: string, key: string, now = Date.now()): string {
    const expires = Math.floor(now / 1000) + this.#ttlSeconds;
    return `${baseUrl}${UPLOAD_PATH_PREFIX}${key}?expires=${expires}&signature=${this.#sign(key, expires)}`;
  }

  /** Throws permission_denied (403) unless the query holds a valid, unexpired signature of `key`. */
  check(key: string, query: URLSearchParams, now = Date.now()): void {
    const expires = query.get("expires");
    const signature = query.get("signature");
    if (expires === null || signature === null) {
      throw permissionDenied("The upload URL is not signed: ask for one with POST /v1/storage/presigned-url");
    }
    const given = Buffer.from(signature);
    const expected = /^\d{1,12}$/.test(expires) ? Buffer.from(this.#sign(key, Number(expires))) : undefined;
    if (!expected || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw permissionDenied("The upload URL's signature is not valid");
    }
    if (now > Number(expires) * 1000) {
      throw permissionDenied("The upload URL has expired: ask for a new one with POST /v1/storage/presigned-url");
    }
  }

  #sign(key: string, expires: number): string {
    return createHmac("sha256", this.#key).update(`${key}\n${expires}`).digest("base64url");
  }
}
