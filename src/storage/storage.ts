import path from "node:path";
import type { NodeServerRequest, NodeServerResponse } from "../platform/http.ts";
import type { Logger } from "../platform/logger.ts";
import { LocalObjectStore } from "./local-store.ts";
import type { ObjectStore } from "./object-store.ts";
import type { StorageSettings } from "./settings.ts";
import { createUploadHandler } from "./upload-handler.ts";
import { UploadUrls } from "./upload-urls.ts";

/** The storage context as the composition root wires it. */
export interface Storage {
  objects: ObjectStore;
  /** Answers uploads to Warden's own disk and resolves true; false for any other request (and always with S3). */
  uploads(req: NodeServerRequest, res: NodeServerResponse): Promise<boolean>;
  close(): Promise<void>;
}

export async function createStorage(
  settings: StorageSettings,
  deps: { dataDir: string; masterKey: Buffer; logger: Logger },
): Promise<Storage> {
  if (settings.backend === "s3") {
    if (!settings.s3) throw new Error("WARDEN_STORAGE_BACKEND=s3 needs the WARDEN_S3_* settings");
    // Loaded only when configured: the AWS SDK is large.
    const { S3ObjectStore } = await import("./s3-store.ts");
    const objects = new S3ObjectStore(settings.s3, settings, deps.logger);
    return { objects, uploads: async () => false, close: () => objects.close() };
  }
  const urls = new UploadUrls(deps.masterKey, settings.urlTtlSeconds);
  const objects = new LocalObjectStore({ root: path.join(deps.dataDir, "storage"), urls, maxObjectBytes: settings.maxObjectBytes });
  await objects.removeStaleTempFiles();
  return { objects, uploads: createUploadHandler(objects, urls, deps.logger), close: () => objects.close() };
}
