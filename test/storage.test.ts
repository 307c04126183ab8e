import { randomBytes } from "node:crypto";
import { mkdir, readdir, rm, stat, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/platform/config.ts";
import { createLogger } from "../src/platform/logger.ts";
import type { ObjectStore } from "../src/storage/object-store.ts";
import { createStorage, type Storage } from "../src/storage/storage.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { client, errorBody, type Call } from "./support/http.ts";
import { pythonMultipart, pythonPost, send } from "./support/python-upload.ts";
import { until } from "./support/wait.ts";
import { addWorkspace } from "./support/workspace.ts";

/** Shared by both processes of the test, as every process of one deployment shares it. */
const masterKey = randomBytes(32);
const maxObjectBytes = 4096;

let t: TestApp;
let call: Call;
/** The test's own view of the storage folder, as another process on the same data dir has it. */
let storage: Storage;
let objects: ObjectStore;
let workspaceId: string;
let other: Awaited<ReturnType<typeof addWorkspace>>;

interface Presigned {
  url: string;
  storageUri: string;
  fields: Record<string, string>;
}

beforeAll(async () => {
  t = await startTestApp({
    env: { WARDEN_MASTER_KEY: masterKey.toString("hex"), WARDEN_STORAGE_MAX_OBJECT_BYTES: String(maxObjectBytes) },
  });
  call = client(t.baseUrl, t.adminKey);
  storage = await createStorage(t.config.storage, { dataDir: t.config.dataDir, masterKey, logger: createLogger("silent") });
  objects = storage.objects;
  other = await addWorkspace(t.app);
  workspaceId = keyOf((await presign("probe.csv")).storageUri).split("/")[0]!;
});
afterAll(async () => {
  await storage?.close();
  await t?.stop();
});

async function presign(objectName: string, as: Call = call): Promise<Presigned> {
  const res = await as("POST", `/v1/storage/presigned-url?objectName=${encodeURIComponent(objectName)}`);
  expect(res.status).toBe(200);
  return res.body as Presigned;
}

function keyOf(storageUri: string): string {
  return storageUri.slice("local://".length);
}

async function readAll(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Every byte value, and lines that look like multipart boundaries: a file that only survives binary-safe handling. */
function awkwardBytes(): Buffer {
  const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  return Buffer.concat([all, Buffer.from("\r\n--\r\n--boundary\r\n\r\n"), all]);
}

/** What the temporary folder of uploads holds: nothing once every upload has been answered. */
async function tempFiles(): Promise<string[]> {
  return readdir(path.join(t.config.dataDir, "storage", ".uploading")).catch(() => []);
}

describe("POST /v1/storage/presigned-url", () => {
  it("answers a signed, expiring upload URL on Warden's own disk, its local:// URI and no fields", async () => {
    const before = Math.floor(Date.now() / 1000);
    // As the Python SDK sends it: a JSON content type and an empty body.
    const res = await call("POST", "/v1/storage/presigned-url?objectName=bundle.tar", { rawBody: "", headers: { "content-type": "application/json" } });
    const after = Math.floor(Date.now() / 1000);
    expect(res.status).toBe(200);
    const body = res.body as Presigned;
    expect(Object.keys(body)).toEqual(["url", "storageUri", "fields"]);
    expect(body.fields).toEqual({});
    const key = `${workspaceId}/${keyOf(body.storageUri).split("/")[1]}/bundle.tar`;
    expect(body.storageUri).toBe(`local://${key}`);
    expect(keyOf(body.storageUri)).toMatch(/^[0-9a-f-]{36}\/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\/bundle\.tar$/);
    const url = new URL(body.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${t.baseUrl}/v1/storage/objects/${key}`);
    expect([...url.searchParams.keys()]).toEqual(["expires", "signature"]);
    const expires = Number(url.searchParams.get("expires"));
    expect(expires).toBeGreaterThanOrEqual(before + 3600);
    expect(expires).toBeLessThanOrEqual(after + 3600);
    expect(url.searchParams.get("signature")).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("makes a new key for every URL, even for the same name", async () => {
    const first = await presign("bundle.tar");
    const second = await presign("bundle.tar");
    expect(first.storageUri).not.toBe(second.storageUri);
  });

  it("keeps slashes of the object name and replaces other characters outside A-Z a-z 0-9 . _ -", async () => {
    expect(keyOf((await presign("attachments/ab c/é?.png")).storageUri)).toMatch(/\/attachments\/ab_c\/__\.png$/);
    expect(keyOf((await presign("/./a//b.csv")).storageUri)).toMatch(/^[0-9a-f-]{36}\/[0-9a-f-]{36}\/a\/b\.csv$/);
    const long = "n".repeat(1020) + ".csv";
    const key = keyOf((await presign(long)).storageUri);
    // The key keeps to S3's 1,024 bytes, and each segment to 255: the name loses its beginning, never its extension.
    expect(key.length).toBeLessThanOrEqual(1024);
    expect(key).toMatch(/\/n{251}\.csv$/);
  });

  it.each([
    ["", "objectName is required"],
    ["x".repeat(1025), "objectName must be at most 1024 characters"],
    ["../../etc/passwd", 'objectName must not contain ".." path segments'],
    ["a/../b.csv", 'objectName must not contain ".." path segments'],
    ["a\\..\\b.csv", 'objectName must not contain ".." path segments'],
    ["/./", "objectName must name a file, such as bundle.tar"],
    ["a\u0000b", "objectName must not contain NUL characters"],
  ])("refuses the object name %j with 400", async (objectName, message) => {
    const res = await call("POST", `/v1/storage/presigned-url?objectName=${encodeURIComponent(objectName)}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorBody(message, "invalid_argument"));
  });

  it("refuses a call without objectName with 400", async () => {
    const res = await call("POST", "/v1/storage/presigned-url");
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorBody("objectName is required", "invalid_argument"));
  });

  it("needs an API key", async () => {
    const res = await call("POST", "/v1/storage/presigned-url?objectName=a.csv", { key: null });
    expect(res.status).toBe(401);
  });
});

describe("uploads to Warden's own disk", () => {
  it("takes the Python SDK's local upload (a multipart POST, the file in `file`, no API key) and open() reads it back", async () => {
    const { url, storageUri, fields } = await presign("bundle.tar");
    const data = awkwardBytes();
    // The SDK's default (S3-style) uploader sends the fields first: with {} it is the local upload exactly.
    const res = await pythonPost(url, fields, { filename: "bundle.tar", data });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(res.text)).toEqual({ success: true, storageUri, size: data.length });
    const opened = await objects.open(workspaceId, storageUri, { maxBytes: maxObjectBytes });
    expect(opened.objectName).toBe("bundle.tar");
    expect(opened.size).toBe(data.length);
    expect((await readAll(opened.body)).equals(data)).toBe(true);
  });

  it("reads the object for a process with the same master key, and ignores the multipart filename and other parts", async () => {
    const { url, storageUri } = await presign("batch_data_1718031233.410203_x.arrow");
    // The SDK renames a CSV after the URL was made for .arrow; a stray text part comes first.
    const res = await pythonPost(url, { note: "ignored" }, { filename: "batch_data.csv", data: Buffer.from("a,b\n1,2\n") });
    expect(res.status).toBe(200);
    const opened = await objects.open(workspaceId, storageUri, { maxBytes: 100 });
    expect(opened.objectName).toBe("batch_data_1718031233.410203_x.arrow");
    expect((await readAll(opened.body)).toString()).toBe("a,b\n1,2\n");
  });

  it("takes a PUT of the raw bytes, also chunked", async () => {
    const { url, storageUri } = await presign("raw.jsonl");
    const data = awkwardBytes();
    const put = await fetch(url, { method: "PUT", body: data, headers: { "content-type": "application/octet-stream" } });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({ success: true, storageUri, size: data.length });
    expect((await readAll((await objects.open(workspaceId, storageUri, { maxBytes: maxObjectBytes })).body)).equals(data)).toBe(true);

    const chunked = await presign("chunked.jsonl");
    const res = await send(chunked.url, "PUT", {}, [Buffer.from('{"a":1}\n'), Buffer.from('{"a":2}\n')]);
    expect(res.status).toBe(200);
    expect((await readAll((await objects.open(workspaceId, chunked.storageUri, { maxBytes: 100 })).body)).toString()).toBe('{"a":1}\n{"a":2}\n');
  });

  it("replaces the object when the same URL is used again", async () => {
    const { url, storageUri } = await presign("again.csv");
    expect((await fetch(url, { method: "PUT", body: "first" })).status).toBe(200);
    expect((await fetch(url, { method: "PUT", body: "second" })).status).toBe(200);
    expect((await readAll((await objects.open(workspaceId, storageUri, { maxBytes: 100 })).body)).toString()).toBe("second");
  });

  it("accepts a URL signed by another process with the same master key, and refuses its own once it has expired", async () => {
    const second = await startTestApp({
      database: t.database,
      adminKey: t.adminKey,
      env: { WARDEN_MASTER_KEY: masterKey.toString("hex"), WARDEN_STORAGE_URL_TTL_SECONDS: "1" },
    });
    try {
      const fromFirst = await presign("shared.csv");
      const res = await fetch(fromFirst.url.replace(t.baseUrl, second.baseUrl), { method: "PUT", body: "x" });
      expect(res.status).toBe(200);

      const { url, storageUri } = await presign("late.csv", client(second.baseUrl, t.adminKey));
      const expires = Number(new URL(url).searchParams.get("expires"));
      await until(async () => Date.now() > expires * 1000, "the upload URL to expire", 5_000);
      const late = await fetch(url, { method: "PUT", body: "x" });
      expect(late.status).toBe(403);
      expect(await late.json()).toEqual(
        errorBody("The upload URL has expired: ask for a new one with POST /v1/storage/presigned-url", "permission_denied"),
      );
      const secondObjects = await createStorage(second.config.storage, { dataDir: second.config.dataDir, masterKey, logger: createLogger("silent") });
      await expect(secondObjects.objects.open(workspaceId, storageUri, { maxBytes: 100 })).rejects.toMatchObject({ code: Code.NotFound });
    } finally {
      await second.stop();
    }
  });

  describe("refuses, with 403, a URL that Warden did not sign as it is", () => {
    const invalid = errorBody("The upload URL's signature is not valid", "permission_denied");

    it("a tampered signature", async () => {
      const { url } = await presign("a.csv");
      const u = new URL(url);
      const signature = u.searchParams.get("signature")!;
      u.searchParams.set("signature", (signature[0] === "A" ? "B" : "A") + signature.slice(1));
      const res = await fetch(u, { method: "PUT", body: "x" });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual(invalid);
    });

    it("a later expiry", async () => {
      const { url } = await presign("a.csv");
      const u = new URL(url);
      u.searchParams.set("expires", String(Number(u.searchParams.get("expires")) + 86_400));
      const res = await pythonPost(u.toString(), {}, { filename: "a.csv", data: Buffer.from("x") });
      expect(res.status).toBe(403);
      expect(JSON.parse(res.text)).toEqual(invalid);
    });

    it("a key moved to another workspace, and nothing is stored there", async () => {
      const { url, storageUri } = await presign("a.csv");
      const moved = url.replace(`/objects/${workspaceId}/`, `/objects/${other.workspaceId}/`);
      expect(moved).not.toBe(url);
      const res = await pythonPost(moved, {}, { filename: "a.csv", data: Buffer.from("x") });
      expect(res.status).toBe(403);
      expect(JSON.parse(res.text)).toEqual(invalid);
      const otherUri = storageUri.replace(workspaceId, other.workspaceId);
      await expect(objects.open(other.workspaceId, otherUri, { maxBytes: 100 })).rejects.toMatchObject({ code: Code.NotFound });
    });

    it("a path that leaves the key", async () => {
      const { url } = await presign("a.csv");
      const u = new URL(url);
      // Sent as is: fetch would resolve the dots before sending.
      const res = await send(`${u.origin}${u.pathname.replace(/a\.csv$/, "%2e%2e/a.csv")}${u.search}`, "PUT", {}, [Buffer.from("x")]);
      expect(res.status).toBe(403);
      expect(JSON.parse(res.text)).toEqual(invalid);
    });

    it("no signature at all", async () => {
      const { url } = await presign("a.csv");
      const res = await fetch(url.slice(0, url.indexOf("?")), { method: "PUT", body: "x" });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual(errorBody("The upload URL is not signed: ask for one with POST /v1/storage/presigned-url", "permission_denied"));
    });
  });

  describe("an upload over WARDEN_STORAGE_MAX_OBJECT_BYTES is 413, and leaves nothing behind", () => {
    const tooLarge = errorBody(`The upload is larger than ${maxObjectBytes} bytes`, "resource_exhausted");

    it.each([
      ["a PUT that declares its length", (url: string) => send(url, "PUT", { "content-length": String(maxObjectBytes + 1) }, [Buffer.alloc(maxObjectBytes + 1, 1)])],
      ["a chunked PUT", (url: string) => send(url, "PUT", {}, [Buffer.alloc(3000, 1), Buffer.alloc(3000, 2)])],
      ["the Python SDK's multipart POST", (url: string) => pythonPost(url, {}, { filename: "big.csv", data: Buffer.alloc(maxObjectBytes + 1, 3) })],
      [
        "a chunked multipart POST",
        (url: string) => {
          const { body, contentType } = pythonMultipart({}, { filename: "big.csv", data: Buffer.alloc(3 * maxObjectBytes, 4) });
          return send(url, "POST", { "content-type": contentType }, [body.subarray(0, 5000), body.subarray(5000)]);
        },
      ],
    ])("%s", async (_name, upload) => {
      const { url, storageUri } = await presign("big.csv");
      const res = await upload(url);
      expect(res.status).toBe(413);
      expect(JSON.parse(res.text)).toEqual(tooLarge);
      await expect(objects.open(workspaceId, storageUri, { maxBytes: 10 * maxObjectBytes })).rejects.toMatchObject({ code: Code.NotFound });
      expect(await tempFiles()).toEqual([]);
    });

    it("takes an object of exactly the cap", async () => {
      const { url, storageUri } = await presign("exact.csv");
      const res = await pythonPost(url, {}, { filename: "exact.csv", data: Buffer.alloc(maxObjectBytes, 5) });
      expect(res.status).toBe(200);
      expect((await objects.open(workspaceId, storageUri, { maxBytes: maxObjectBytes })).size).toBe(maxObjectBytes);
    });
  });

  describe("refuses a body that is not an upload", () => {
    it("a POST that is not multipart is 400", async () => {
      const { url, storageUri } = await presign("a.csv");
      const res = await fetch(url, { method: "POST", body: "a,b\n", headers: { "content-type": "text/csv" } });
      expect(res.status).toBe(400);
      expect((await res.json()) as unknown).toEqual(
        errorBody('Send the object as multipart/form-data with the file in a part named "file", or PUT its bytes (Unsupported content type: text/csv)', "invalid_argument"),
      );
      await expect(objects.open(workspaceId, storageUri, { maxBytes: 100 })).rejects.toMatchObject({ code: Code.NotFound });
    });

    it("a multipart body without a file in `file` is 400", async () => {
      const { url } = await presign("a.csv");
      const boundary = "b0undary";
      const body = `--${boundary}\r\nContent-Disposition: form-data; name="data"; filename="a.csv"\r\n\r\nx\r\n--${boundary}--\r\n`;
      const res = await fetch(url, { method: "POST", body, headers: { "content-type": `multipart/form-data; boundary=${boundary}` } });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(errorBody('The multipart body has no file in a part named "file"', "invalid_argument"));
    });

    it("a multipart body cut short is 400, and leaves nothing behind", async () => {
      const { url, storageUri } = await presign("a.csv");
      const { body, contentType } = pythonMultipart({}, { filename: "a.csv", data: Buffer.alloc(100, 7) });
      const res = await send(url, "POST", { "content-type": contentType }, [body.subarray(0, body.length - 10)]);
      expect(res.status).toBe(400);
      expect(JSON.parse(res.text)).toEqual(errorBody("The multipart body is malformed: Unexpected end of form", "invalid_argument"));
      await expect(objects.open(workspaceId, storageUri, { maxBytes: 100 })).rejects.toMatchObject({ code: Code.NotFound });
      expect(await tempFiles()).toEqual([]);
    });

    it("other methods are 405 with Allow", async () => {
      const { url } = await presign("a.csv");
      const res = await fetch(url);
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST, PUT");
      expect(await res.json()).toEqual(errorBody("GET is not allowed on an upload URL; use POST or PUT", "invalid_argument"));
    });
  });
});

describe("open()", () => {
  let storageUri: string;

  beforeAll(async () => {
    const presigned = await presign("data.csv");
    storageUri = presigned.storageUri;
    expect((await fetch(presigned.url, { method: "PUT", body: "a,b\n1,2\n" })).status).toBe(200);
  });

  it("is Object not found for another workspace, as for a missing object", async () => {
    const notFound = { code: Code.NotFound, rawMessage: "Object not found" };
    await expect(objects.open(other.workspaceId, storageUri, { maxBytes: 100 })).rejects.toMatchObject(notFound);
    const missing = (await presign("never-uploaded.csv")).storageUri;
    await expect(objects.open(workspaceId, missing, { maxBytes: 100 })).rejects.toMatchObject(notFound);
    const [ws, id] = keyOf(storageUri).split("/");
    for (const uri of [`local://${ws}/${id}/../${id}/data.csv`, `local://${ws}/${id}`, `local://${ws}/not-a-uuid/data.csv`, "local://../../etc/passwd"]) {
      await expect(objects.open(workspaceId, uri, { maxBytes: 100 })).rejects.toMatchObject(notFound);
    }
  });

  it("is a 400 for another scheme or what is not a storage URI", async () => {
    await expect(objects.open(workspaceId, "s3://bucket/key.csv", { maxBytes: 100 })).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: 'storageUri has the scheme "s3", but this server keeps uploads at local:// URIs',
    });
    for (const uri of ["", "data.csv", "/tmp/data.csv"]) {
      await expect(objects.open(workspaceId, uri, { maxBytes: 100 })).rejects.toMatchObject({ code: Code.InvalidArgument });
    }
  });

  it("is a 400 naming the cap for an object over maxBytes", async () => {
    await expect(objects.open(workspaceId, storageUri, { maxBytes: 4 })).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: "The object is larger than 4 bytes, the most this server reads",
    });
  });

  it("stops reading when the signal aborts", async () => {
    const controller = new AbortController();
    const opened = await objects.open(workspaceId, storageUri, { maxBytes: 100, signal: controller.signal });
    controller.abort();
    await expect(readAll(opened.body)).rejects.toMatchObject({ name: "AbortError" });
  });

  it("keeps objects private on disk (mode 0600)", async () => {
    const info = await stat(path.join(t.config.dataDir, "storage", ...keyOf(storageUri).split("/")));
    expect(info.mode & 0o777).toBe(0o600);
  });
});

describe("storage settings", () => {
  const s3 = { WARDEN_STORAGE_BACKEND: "s3", WARDEN_S3_BUCKET: "b" };

  it("defaults to Warden's own disk, URLs valid for an hour and objects of up to 1 GiB", () => {
    expect(loadConfig({}).storage).toEqual({ backend: "local", urlTtlSeconds: 3600, maxObjectBytes: 1024 ** 3, s3: undefined });
  });

  it("reads the S3 settings, with the prefix as a folder", () => {
    expect(
      loadConfig({
        ...s3,
        WARDEN_S3_REGION: "eu-west-1",
        WARDEN_S3_ENDPOINT: "http://minio:9000",
        WARDEN_S3_ACCESS_KEY_ID: "id",
        WARDEN_S3_SECRET_ACCESS_KEY: "secret",
        WARDEN_S3_FORCE_PATH_STYLE: "true",
        WARDEN_S3_PREFIX: "/warden/uploads",
        WARDEN_S3_TIMEOUT_MS: "5000",
      }).storage.s3,
    ).toEqual({
      bucket: "b",
      region: "eu-west-1",
      endpoint: "http://minio:9000",
      credentials: { accessKeyId: "id", secretAccessKey: "secret" },
      forcePathStyle: true,
      prefix: "warden/uploads/",
      timeoutMs: 5000,
    });
    expect(loadConfig(s3).storage.s3).toEqual({
      bucket: "b",
      region: "us-east-1",
      endpoint: undefined,
      credentials: undefined,
      forcePathStyle: false,
      prefix: "",
      timeoutMs: 30_000,
    });
  });

  it.each([
    [{ WARDEN_STORAGE_BACKEND: "gcs" }, 'WARDEN_STORAGE_BACKEND must be local or s3, got "gcs"'],
    [{ WARDEN_STORAGE_BACKEND: "s3" }, "WARDEN_S3_BUCKET is required when WARDEN_STORAGE_BACKEND is s3"],
    [{ ...s3, WARDEN_S3_ACCESS_KEY_ID: "id" }, "WARDEN_S3_ACCESS_KEY_ID and WARDEN_S3_SECRET_ACCESS_KEY go together: set both, or neither for the AWS SDK's default chain"],
    [{ ...s3, WARDEN_S3_ENDPOINT: "minio:9000" }, 'WARDEN_S3_ENDPOINT must be an http or https URL, got "minio:9000"'],
    [{ ...s3, WARDEN_S3_FORCE_PATH_STYLE: "yes" }, 'WARDEN_S3_FORCE_PATH_STYLE must be true or false, got "yes"'],
    [{ ...s3, WARDEN_S3_PREFIX: "a/../b" }, "WARDEN_S3_PREFIX must be at most 256 characters"],
    [{ WARDEN_STORAGE_URL_TTL_SECONDS: "0" }, "WARDEN_STORAGE_URL_TTL_SECONDS must be between 1 and 604800, got 0"],
    [{ WARDEN_STORAGE_MAX_OBJECT_BYTES: "0" }, "WARDEN_STORAGE_MAX_OBJECT_BYTES must be between 1 and 5368709120, got 0"],
  ])("refuses %j at start", (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe("temporary files", () => {
  it("removes, at start, what uploads of a process that died left over a day ago, and nothing newer", async () => {
    const temp = path.join(t.config.dataDir, "storage", ".uploading");
    await mkdir(temp, { recursive: true });
    await writeFile(path.join(temp, "old"), "x");
    await writeFile(path.join(temp, "new"), "x");
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 3600 * 1000);
    await utimes(path.join(temp, "old"), twoDaysAgo, twoDaysAgo);
    const restarted = await createStorage(t.config.storage, { dataDir: t.config.dataDir, masterKey, logger: createLogger("silent") });
    await restarted.close();
    expect(await readdir(temp)).toEqual(["new"]);
    await rm(path.join(temp, "new"));
  });
});
