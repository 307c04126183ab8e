import { expect } from "vitest";
import { pack } from "tar-stream";
import type { Call } from "./http.ts";
import { pythonPost } from "./python-upload.ts";

/** A tar made as Python's tarfile makes one of a folder: the folder's name first in every path. */
export async function tarOf(files: Record<string, string>): Promise<Buffer> {
  const archive = pack();
  for (const [name, content] of Object.entries(files)) archive.entry({ name }, content);
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A commit as the Python SDK pushes one: presigned URL → upload (S3 style) → create the version. Answers its ID. */
export async function pushBundle(call: Call, projectId: string, bundle: Uint8Array, objectName = "bundle.tar"): Promise<string> {
  const presigned = await call("POST", `/v1/storage/presigned-url?objectName=${objectName}`);
  const { url, fields, storageUri } = presigned.body as { url: string; fields: Record<string, string>; storageUri: string };
  expect((await pythonPost(url, fields, { filename: objectName, data: bundle })).status).toBe(200);
  const created = await call("POST", `/v1/projects/${projectId}/versions`, { body: { commit: { message: "New commit", source: "cli" }, storageUri } });
  expect(created.status).toBe(201);
  return (created.body as { id: string }).id;
}
