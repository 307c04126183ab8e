import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";

const ivBytes = 12;
const tagBytes = 16;

/**
 * Seals provider API keys at rest: AES-256-GCM under the master key, stored as iv | tag | data.
 * Every process that shares a database must share the master key.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error("the master key must be 32 bytes");
    this.#key = key;
  }

  seal(plaintext: string): Buffer {
    const iv = randomBytes(ivBytes);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), data]);
  }

  open(sealed: Uint8Array): string {
    const buffer = Buffer.from(sealed);
    const decipher = createDecipheriv("aes-256-gcm", this.#key, buffer.subarray(0, ivBytes));
    decipher.setAuthTag(buffer.subarray(ivBytes, ivBytes + tagBytes));
    return Buffer.concat([decipher.update(buffer.subarray(ivBytes + tagBytes)), decipher.final()]).toString("utf8");
  }
}

/**
 * The master key: WARDEN_MASTER_KEY (32 bytes, as 64 hex digits or base64), or else a key made
 * once and kept in `<dataDir>/master-key` (mode 0600).
 */
export async function loadMasterKey(configured: string | undefined, dataDir: string): Promise<Buffer> {
  if (configured) return decodeKey(configured, "WARDEN_MASTER_KEY");
  const file = path.join(dataDir, "master-key");
  if (existsSync(file)) return decodeKey((await readFile(file, "utf8")).trim(), file);
  const key = randomBytes(32);
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, key.toString("base64") + "\n", { mode: 0o600, flag: "wx" }).catch(async (err: NodeJS.ErrnoException) => {
    // Another process on the same data dir made one first: use theirs.
    if (err.code !== "EEXIST") throw err;
  });
  return decodeKey((await readFile(file, "utf8")).trim(), file);
}

function decodeKey(text: string, source: string): Buffer {
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  if (key.length !== 32) throw new Error(`${source}: the master key must be 32 bytes, as 64 hex digits or base64`);
  return key;
}
