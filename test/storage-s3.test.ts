import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../src/platform/logger.ts";
import { createStorage, type Storage } from "../src/storage/storage.ts";
import { startTestApp, type TestApp } from "./support/app.ts";
import { startFakeS3, type FakeS3 } from "./support/fake-s3.ts";
import { client, type Call } from "./support/http.ts";
import { pythonPost } from "./support/python-upload.ts";
import { addWorkspace } from "./support/workspace.ts";

const s3 = { bucket: "warden-uploads", region: "eu-west-1", accessKeyId: "AKIAWARDENTEST000001", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYTESTKEY" };
const maxObjectBytes = 4096;

let fake: FakeS3;
let t: TestApp;
let call: Call;
/** The same bucket as Warden sees it, for open(), as the ingestion of an upload uses it. */
let storage: Storage;
let workspaceId: string;
let other: Awaited<ReturnType<typeof addWorkspace>>;

interface Presigned {
  url: string;
  storageUri: string;
  fields: Record<string, string>;
}

beforeAll(async () => {
  fake = await startFakeS3(s3);
  t = await startTestApp({
    env: {
      WARDEN_STORAGE_BACKEND: "s3",
      WARDEN_S3_BUCKET: s3.bucket,
      WARDEN_S3_REGION: s3.region,
      WARDEN_S3_ENDPOINT: fake.url,
      WARDEN_S3_ACCESS_KEY_ID: s3.accessKeyId,
      WARDEN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      WARDEN_S3_FORCE_PATH_STYLE: "true",
      WARDEN_S3_PREFIX: "uploads",
      WARDEN_STORAGE_MAX_OBJECT_BYTES: String(maxObjectBytes),
    },
  });
  call = client(t.baseUrl, t.adminKey);
  storage = await createStorage(t.config.storage, { dataDir: t.config.dataDir, masterKey: Buffer.alloc(32), logger: createLogger("silent") });
  other = await addWorkspace(t.app);
  const probe = await presign("probe.csv");
  workspaceId = probe.storageUri.split("/")[4]!;
});
afterAll(async () => {
  await storage?.close();
  await t?.stop();
  await fake?.close();
});

async function presign(objectName: string): Promise<Presigned> {
  const res = await call("POST", `/v1/storage/presigned-url?objectName=${encodeURIComponent(objectName)}`);
  expect(res.status).toBe(200);
  return res.body as Presigned;
}

async function readAll(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

function policyOf(fields: Record<string, string>): { expiration: string; conditions: unknown[] } {
  return JSON.parse(Buffer.from(fields.Policy!, "base64").toString("utf8")) as { expiration: string; conditions: unknown[] };
}

describe("S3-compatible storage", () => {
  it("answers the bucket's POST-policy URL, its fields and an s3:// URI under the prefix and the workspace", async () => {
    const before = Date.now();
    const { url, storageUri, fields } = await presign("bundle.tar");
    const key = storageUri.slice(`s3://${s3.bucket}/`.length);
    expect(storageUri).toMatch(new RegExp(`^s3://${s3.bucket}/uploads/${workspaceId}/[0-9a-f-]{36}/bundle\\.tar$`));
    expect(url).toBe(`${fake.url}/${s3.bucket}`);
    const date = fields["X-Amz-Date"]!;
    expect(fields).toEqual({
      bucket: s3.bucket,
      "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
      "X-Amz-Credential": `${s3.accessKeyId}/${date.slice(0, 8)}/${s3.region}/s3/aws4_request`,
      "X-Amz-Date": expect.stringMatching(/^\d{8}T\d{6}Z$/),
      key,
      Policy: expect.any(String),
      "X-Amz-Signature": expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const policy = policyOf(fields);
    // The policy pins the key and the bucket, caps the size, and expires after WARDEN_STORAGE_URL_TTL_SECONDS.
    expect(policy.conditions).toContainEqual(["content-length-range", 0, maxObjectBytes]);
    expect(policy.conditions).toContainEqual({ key });
    expect(policy.conditions).toContainEqual({ bucket: s3.bucket });
    const expiration = Date.parse(policy.expiration);
    expect(expiration).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 3600_000);
    expect(expiration).toBeLessThanOrEqual(Date.now() + 3600_000);
  });

  it("takes the Python SDK's upload (the fields, then the file) and open() reads it back with a signed GetObject", async () => {
    const { url, storageUri, fields } = await presign("batch_data_1718031233.410203_x.arrow");
    const data = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from("\r\n--x\r\n")]);
    const res = await pythonPost(url, fields, { filename: "batch_data.csv", data });
    expect(res.status).toBe(204);
    const key = storageUri.slice(`s3://${s3.bucket}/`.length);
    expect(fake.objects.get(key)?.equals(data)).toBe(true);

    const opened = await storage.objects.open(workspaceId, storageUri, { maxBytes: maxObjectBytes });
    expect(opened.objectName).toBe("batch_data_1718031233.410203_x.arrow");
    expect(opened.size).toBe(data.length);
    expect((await readAll(opened.body)).equals(data)).toBe(true);
    expect(fake.requests).toContain(`GET /${s3.bucket}/${key}?x-id=GetObject`);
  });

  it("the policy holds the size cap: S3 refuses a larger file", async () => {
    const { url, fields } = await presign("big.csv");
    const res = await pythonPost(url, fields, { filename: "big.csv", data: Buffer.alloc(maxObjectBytes + 1) });
    expect(res.status).toBe(400);
    expect(res.text).toContain("<Code>EntityTooLarge</Code>");
  });

  it("the policy is signed: S3 refuses a policy whose cap was raised", async () => {
    const { url, fields } = await presign("big.csv");
    const policy = policyOf(fields);
    policy.conditions = policy.conditions.map((c) => (Array.isArray(c) && c[0] === "content-length-range" ? ["content-length-range", 0, 10 * maxObjectBytes] : c));
    const forged = { ...fields, Policy: Buffer.from(JSON.stringify(policy)).toString("base64") };
    const res = await pythonPost(url, forged, { filename: "big.csv", data: Buffer.alloc(maxObjectBytes + 1) });
    expect(res.status).toBe(403);
    expect(res.text).toContain("<Code>SignatureDoesNotMatch</Code>");
  });

  it("the policy pins the key: S3 refuses the upload under another workspace's key", async () => {
    const { url, fields } = await presign("a.csv");
    const moved = { ...fields, key: fields.key!.replace(workspaceId, other.workspaceId) };
    const res = await pythonPost(url, moved, { filename: "a.csv", data: Buffer.from("x") });
    expect(res.status).toBe(403);
    expect(res.text).toContain("<Code>AccessDenied</Code>");
    expect([...fake.objects.keys()].some((k) => k.includes(other.workspaceId))).toBe(false);
  });

  describe("open()", () => {
    let storageUri: string;

    beforeAll(async () => {
      const presigned = await presign("data.csv");
      storageUri = presigned.storageUri;
      expect((await pythonPost(presigned.url, presigned.fields, { filename: "data.csv", data: Buffer.from("a,b\n1,2\n") })).status).toBe(204);
    });

    it("is Object not found from another workspace, for a missing key, and outside the bucket or the prefix", async () => {
      const notFound = { code: Code.NotFound, rawMessage: "Object not found" };
      await expect(storage.objects.open(other.workspaceId, storageUri, { maxBytes: 100 })).rejects.toMatchObject(notFound);
      const missing = (await presign("never-uploaded.csv")).storageUri;
      await expect(storage.objects.open(workspaceId, missing, { maxBytes: 100 })).rejects.toMatchObject(notFound);
      const key = storageUri.slice(`s3://${s3.bucket}/`.length);
      for (const uri of [`s3://other-bucket/${key}`, `s3://${s3.bucket}/${key.slice("uploads/".length)}`, `s3://${s3.bucket}/uploads/../${key}`]) {
        await expect(storage.objects.open(workspaceId, uri, { maxBytes: 100 })).rejects.toMatchObject(notFound);
      }
    });

    it("is a 400 for another scheme or a URI without a key", async () => {
      await expect(storage.objects.open(workspaceId, "local://a/b/c.csv", { maxBytes: 100 })).rejects.toMatchObject({
        code: Code.InvalidArgument,
        rawMessage: 'storageUri has the scheme "local", but this server keeps uploads at s3:// URIs',
      });
      await expect(storage.objects.open(workspaceId, `s3://${s3.bucket}`, { maxBytes: 100 })).rejects.toMatchObject({
        code: Code.InvalidArgument,
        rawMessage: "storageUri must be s3://<bucket>/<key>",
      });
    });

    it("is a 400 naming the cap for an object over maxBytes", async () => {
      await expect(storage.objects.open(workspaceId, storageUri, { maxBytes: 4 })).rejects.toMatchObject({
        code: Code.InvalidArgument,
        rawMessage: "The object is larger than 4 bytes, the most this server reads",
      });
    });

    it("gives up on an S3 that does not answer, after WARDEN_S3_TIMEOUT_MS", async () => {
      const { url, storageUri: stalled, fields } = await presign("stall.csv");
      expect((await pythonPost(url, fields, { filename: "stall.csv", data: Buffer.from("x") })).status).toBe(204);
      const impatient = await createStorage(
        { ...t.config.storage, s3: { ...t.config.storage.s3!, timeoutMs: 200 } },
        { dataDir: t.config.dataDir, masterKey: Buffer.alloc(32), logger: createLogger("silent") },
      );
      try {
        await expect(impatient.objects.open(workspaceId, stalled, { maxBytes: 100 })).rejects.toMatchObject({
          code: Code.Unavailable,
          rawMessage: "The object store did not answer in time. Retry in a few seconds.",
        });
      } finally {
        await impatient.close();
      }
    });
  });

  it("leaves uploads to S3: Warden's own upload path is not served", async () => {
    const res = await fetch(`${t.baseUrl}/v1/storage/objects/${workspaceId}/x/a.csv`, { method: "PUT", body: "x" });
    expect(res.status).toBe(404);
  });
});
