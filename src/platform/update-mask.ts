import { isFieldSet, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { invalidArgument } from "./errors.ts";

/**
 * The fields an update changes (AIP-134): those named in `update_mask`, where a named field that
 * is unset means "clear it"; or, with no mask, the fields that are set.
 */
export function fieldsToUpdate<Desc extends DescMessage>(
  schema: Desc,
  request: MessageShape<Desc> & { updateMask?: FieldMask },
  updatable: readonly string[],
): Set<string> {
  const paths = request.updateMask?.paths ?? [];
  for (const path of paths) {
    if (!updatable.includes(path)) throw invalidArgument(`update_mask names ${path}, which cannot be updated`);
  }
  if (paths.length > 0) return new Set(paths);
  return new Set(
    updatable.filter((name) => {
      const field = schema.fields.find((f) => f.name === name);
      return field !== undefined && isFieldSet(request, field);
    }),
  );
}
