/**
 * A fake S3 on loopback that speaks S3's wire format for what Warden and the Openlayer SDKs use:
 * - browser-based POST uploads (`POST /<bucket>` with path-style addressing): a multipart form of
 *   `key`, `Policy`, `X-Amz-*` fields then `file`, checked as S3 checks it: the policy's SigV4
 *   signature under the configured secret, its expiration, every condition (exact, starts-with,
 *   content-length-range), and no field that the policy does not cover;
 * - GetObject and HeadObject (`GET|HEAD /<bucket>/<key>`), with a SigV4 Authorization header
 *   checked against the canonical request.
 * Errors are S3's XML bodies. A GET of a key that contains "stall" never answers, for deadlines.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import busboy from "busboy";

export interface FakeS3Options {
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export interface FakeS3 {
  url: string;
  /** `<key>` → bytes, for the one bucket. */
  objects: Map<string, Buffer>;
  /** Every request as `METHOD /path`, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** Far more than any test uploads; a real S3 takes 5 GiB in one POST. */
const MAX_FORM_BYTES = 16 * 1024 * 1024;

export async function startFakeS3(options: FakeS3Options): Promise<FakeS3> {
  const objects = new Map<string, Buffer>();
  const requests: string[] = [];
  const stalled = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const url = new URL(req.url ?? "/", "http://fake-s3");
    const [, bucket, ...rest] = url.pathname.split("/");
    if (bucket !== options.bucket) return sendXmlError(res, 404, "NoSuchBucket", "The specified bucket does not exist");
    if (req.method === "POST" && rest.length === 0) return void postObject(req, res, options, objects);
    if (req.method === "GET" || req.method === "HEAD") {
      const denied = checkHeaderSignature(req, options);
      if (denied) return sendXmlError(res, 403, "SignatureDoesNotMatch", denied);
      const key = rest.map((part) => decodeURIComponent(part)).join("/");
      if (key.includes("stall")) return void stalled.add(res);
      const object = objects.get(key);
      if (!object) {
        if (req.method === "HEAD") return void res.writeHead(404).end();
        return sendXmlError(res, 404, "NoSuchKey", "The specified key does not exist.");
      }
      res.writeHead(200, {
        "content-type": "application/octet-stream",
        "content-length": object.length,
        etag: `"${createHash("md5").update(object).digest("hex")}"`,
        "last-modified": new Date(0).toUTCString(),
        "accept-ranges": "bytes",
      });
      return void res.end(req.method === "HEAD" ? undefined : object);
    }
    sendXmlError(res, 501, "NotImplemented", "A header you provided implies functionality that is not implemented");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    objects,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of stalled) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function postObject(req: http.IncomingMessage, res: http.ServerResponse, options: FakeS3Options, objects: Map<string, Buffer>): Promise<void> {
  let form: { fields: Map<string, string>; file: Buffer | undefined };
  try {
    form = await readForm(req);
  } catch (err) {
    return sendXmlError(res, 400, "MalformedPOSTRequest", `The body of your POST request is not well-formed multipart/form-data. ${(err as Error).message}`);
  }
  const { fields, file } = form;
  if (!file) return sendXmlError(res, 400, "InvalidArgument", "POST requires exactly one file upload per request.");
  for (const name of ["key", "policy", "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature"]) {
    if (!fields.has(name)) return sendXmlError(res, 400, "InvalidArgument", `Bucket POST must contain a field named '${name}'.`);
  }
  if (fields.get("x-amz-algorithm") !== "AWS4-HMAC-SHA256") return sendXmlError(res, 400, "InvalidArgument", "Unsupported algorithm");
  const [accessKeyId, date, region, service, terminator] = fields.get("x-amz-credential")!.split("/");
  if (accessKeyId !== options.accessKeyId) return sendXmlError(res, 403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.");
  if (region !== options.region || service !== "s3" || terminator !== "aws4_request") {
    return sendXmlError(res, 400, "AuthorizationQueryParametersError", "Error parsing the X-Amz-Credential parameter");
  }
  const policy = fields.get("policy")!;
  const expected = hmac(signingKey(options.secretAccessKey, date!, region, "s3"), policy).toString("hex");
  if (!sameText(expected, fields.get("x-amz-signature")!)) {
    return sendXmlError(res, 403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.");
  }
  let document: { expiration?: string; conditions?: unknown[] };
  try {
    document = JSON.parse(Buffer.from(policy, "base64").toString("utf8")) as typeof document;
  } catch {
    return sendXmlError(res, 400, "InvalidPolicyDocument", "Invalid Policy: Invalid JSON.");
  }
  if (!document.expiration || !(Date.parse(document.expiration) > Date.now())) {
    return sendXmlError(res, 403, "AccessDenied", "Invalid according to Policy: Policy expired.");
  }
  const values = new Map(fields);
  values.set("bucket", options.bucket);
  const covered = new Set<string>();
  for (const condition of document.conditions ?? []) {
    const failure = checkCondition(condition, values, file.length, covered);
    if (failure) return sendXmlError(res, failure.status, failure.code, failure.message);
  }
  for (const name of fields.keys()) {
    if (["policy", "x-amz-signature", "file"].includes(name) || name.startsWith("x-ignore-")) continue;
    if (!covered.has(name)) {
      return sendXmlError(res, 403, "AccessDenied", `Invalid according to Policy: Extra input fields: ${name}`);
    }
  }
  objects.set(fields.get("key")!, file);
  res.writeHead(204, { location: `/${options.bucket}/${fields.get("key")}`, etag: `"${createHash("md5").update(file).digest("hex")}"` }).end();
}

interface Failure {
  status: number;
  code: string;
  message: string;
}

/** One policy condition against the form; names the fields it covers. */
function checkCondition(condition: unknown, values: Map<string, string>, size: number, covered: Set<string>): Failure | undefined {
  const failed = (): Failure => ({ status: 403, code: "AccessDenied", message: `Invalid according to Policy: Policy Condition failed: ${JSON.stringify(condition)}` });
  if (Array.isArray(condition)) {
    const [op, field, value] = condition as [string, unknown, unknown];
    if (op === "content-length-range") {
      if (size < Number(field)) return { status: 400, code: "EntityTooSmall", message: "Your proposed upload is smaller than the minimum allowed size" };
      if (size > Number(value)) return { status: 400, code: "EntityTooLarge", message: "Your proposed upload exceeds the maximum allowed size" };
      return undefined;
    }
    if (typeof field !== "string" || !field.startsWith("$") || typeof value !== "string") return failed();
    const name = field.slice(1).toLowerCase();
    covered.add(name);
    const actual = values.get(name) ?? "";
    if (op === "eq") return actual === value ? undefined : failed();
    if (op === "starts-with") return actual.startsWith(value) ? undefined : failed();
    return failed();
  }
  if (condition && typeof condition === "object") {
    const [[field, value]] = Object.entries(condition) as [[string, unknown]];
    const name = field.toLowerCase();
    covered.add(name);
    return values.get(name) === value ? undefined : failed();
  }
  return failed();
}

/** The form's fields (names lower-cased, as S3 compares them) up to the file; S3 ignores what follows it. */
function readForm(req: http.IncomingMessage): Promise<{ fields: Map<string, string>; file: Buffer | undefined }> {
  return new Promise((resolve, reject) => {
    const fields = new Map<string, string>();
    let file: Buffer | undefined;
    let total = 0;
    const parser = busboy({ headers: req.headers, limits: { fileSize: MAX_FORM_BYTES, files: 1 } });
    parser.on("field", (name, value) => {
      if (file === undefined) fields.set(name.toLowerCase(), value);
    });
    parser.on("file", (name, stream) => {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => {
        total += chunk.length;
        chunks.push(chunk);
      });
      stream.on("end", () => {
        if (name === "file") file = Buffer.concat(chunks, total);
      });
    });
    parser.on("error", reject);
    parser.on("finish", () => resolve({ fields, file }));
    req.pipe(parser);
  });
}

/** Undefined when the request's SigV4 Authorization header is right; else why not. */
function checkHeaderSignature(req: http.IncomingMessage, options: FakeS3Options): string | undefined {
  const match = /^AWS4-HMAC-SHA256 Credential=([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(req.headers.authorization ?? "");
  if (!match) return "The request is not signed with AWS Signature Version 4.";
  const [, credential, signedHeaders, signature] = match as unknown as [string, string, string, string];
  const [accessKeyId, date, region, service, terminator] = credential.split("/");
  if (accessKeyId !== options.accessKeyId || region !== options.region || service !== "s3" || terminator !== "aws4_request") {
    return `The credential ${credential} is not this fake's.`;
  }
  const amzDate = header(req, "x-amz-date");
  const payloadHash = header(req, "x-amz-content-sha256");
  if (!amzDate || !payloadHash || !amzDate.startsWith(date!)) return "x-amz-date and x-amz-content-sha256 are required.";
  const signed = signedHeaders.split(";");
  if (!signed.includes("host") || !signed.includes("x-amz-date")) return "host and x-amz-date must be signed.";
  const [rawPath, rawQuery = ""] = (req.url ?? "/").split("?");
  const canonicalQuery = rawQuery
    .split("&")
    .filter((pair) => pair !== "")
    .map((pair) => {
      const [name = "", value = ""] = pair.split("=");
      return [encodeRfc3986(decodeURIComponent(name)), encodeRfc3986(decodeURIComponent(value))] as const;
    })
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join("&");
  const canonicalHeaders = signed.map((name) => `${name}:${(header(req, name) ?? "").trim().replace(/\s+/g, " ")}\n`).join("");
  const canonicalRequest = [req.method, rawPath, canonicalQuery, canonicalHeaders, signedHeaders, payloadHash].join("\n");
  const scope = `${date}/${region}/s3/aws4_request`;
  const stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, createHash("sha256").update(canonicalRequest).digest("hex")].join("\n");
  const expected = hmac(signingKey(options.secretAccessKey, date!, region, "s3"), stringToSign).toString("hex");
  return sameText(expected, signature) ? undefined : "The request signature we calculated does not match the signature you provided.";
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(",") : value;
}

function encodeRfc3986(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), "aws4_request");
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac("sha256", key).update(data, "utf8").digest();
}

function sameText(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

function sendXmlError(res: http.ServerResponse, status: number, code: string, message: string): void {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>fake</RequestId></Error>`;
  res.writeHead(status, { "content-type": "application/xml", "content-length": Buffer.byteLength(body) }).end(body);
}
