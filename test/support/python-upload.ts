/**
 * Uploads as the Openlayer Python SDK makes them (openlayer/lib/data/_upload.py): `requests`
 * posting a requests_toolbelt MultipartEncoder body to the presigned URL, with no API key.
 * The S3 style sends the presigned `fields` as text parts, then the file; the `local` style sends
 * the file alone. The file part is always named "file", with the object name as its filename and
 * `application/x-tar` as its type, whatever the file holds.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** A MultipartEncoder body, byte for byte: `--boundary`, the part's headers as urllib3 renders them, CRLFs. */
export function pythonMultipart(
  fields: Record<string, string>,
  file: { filename: string; data: Uint8Array },
  boundary = randomBytes(16).toString("hex"),
): { body: Buffer; contentType: string } {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  parts.push(
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.filename}"\r\nContent-Type: application/x-tar\r\n\r\n`),
    Buffer.from(file.data),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  );
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** `requests.post(url, data=encoder, headers={"Content-Type": encoder.content_type})`, with requests' own headers. */
export function pythonPost(url: string, fields: Record<string, string>, file: { filename: string; data: Uint8Array }): Promise<RawResponse> {
  const { body, contentType } = pythonMultipart(fields, file);
  return send(url, "POST", { "content-type": contentType, "content-length": String(body.length) }, [body]);
}

/**
 * One HTTP/1.1 request with the headers `requests` adds. `chunks` are written one by one; without
 * a content-length they go chunked, as a body of unknown length does.
 */
export function send(url: string, method: string, headers: Record<string, string>, chunks: Uint8Array[]): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method,
      headers: {
        "user-agent": "python-requests/2.32.3",
        "accept-encoding": "gzip, deflate",
        accept: "*/*",
        connection: "keep-alive",
        ...headers,
      },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      res.on("error", reject);
    });
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}
