import type { ServiceImpl } from "@connectrpc/connect";
import type { StorageService } from "../../gen/warden/storage/v1/storage_pb.js";
import { principalOf } from "../platform/context.ts";
import { baseUrlOf } from "../platform/urls.ts";
import type { ObjectStore } from "./object-store.ts";

export interface StorageServiceOptions {
  objectStore: ObjectStore;
  /** Base of absolute URLs; absent: taken from the request, as for every other absolute URL. */
  publicUrl: string | undefined;
}

export function createStorageService(options: StorageServiceOptions): ServiceImpl<typeof StorageService> {
  return {
    async createPresignedUrl(req, ctx) {
      return options.objectStore.presign({
        workspaceId: principalOf(ctx).workspaceId,
        objectName: req.objectName,
        baseUrl: baseUrlOf(ctx.requestHeader, options.publicUrl, ctx.url),
      });
    },
  };
}
