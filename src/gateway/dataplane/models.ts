import type { JsonObject } from "@bufbuild/protobuf";
import type { Family } from "../config/types.ts";

/** Model lists in each family's own shape. Warden knows names only, so the rest is fixed. */
export function modelList(family: Family, models: readonly string[]): JsonObject {
  if (family === "messages") {
    const data = models.map((id) => ({ type: "model", id, display_name: id, created_at: "1970-01-01T00:00:00Z" }));
    return { data, has_more: false, first_id: models[0] ?? null, last_id: models.at(-1) ?? null };
  }
  return { object: "list", data: models.map((id) => ({ id, object: "model", created: 0, owned_by: "warden" })) };
}
