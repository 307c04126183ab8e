import { randomUUID } from "node:crypto";
import { invalidArgument } from "../platform/errors.ts";

/** The longest object name a caller may ask for. */
export const MAX_OBJECT_NAME_CHARS = 1024;

/** S3's limit on a key, in bytes; Warden's own disk keeps to it too. Keys are ASCII: chars are bytes. */
export const MAX_KEY_BYTES = 1024;

/** The longest name one path segment may have on common file systems. */
const MAX_SEGMENT_CHARS = 255;

/** `<workspace id>/<object id>/`: two UUIDs and two slashes. */
const KEY_HEAD_CHARS = 36 + 1 + 36 + 1;

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const segmentPattern = /^[A-Za-z0-9._-]{1,255}$/;

/**
 * A new key, `<workspaceId>/<random uuid>/<sanitised objectName>`. Warden makes every key, so
 * that no caller chooses where an object goes: the name is only kept, sanitised, at its end
 * (readers tell a file's format by its extension). Slashes in the name stay (the SDKs upload
 * `attachments/<id>.png`); every other character outside `A-Z a-z 0-9 . _ -` becomes `_`.
 * `maxKeyBytes` leaves room for a prefix before the key: a name too long for it loses its
 * beginning, never its extension.
 */
export function newObjectKey(workspaceId: string, objectName: string, maxKeyBytes = MAX_KEY_BYTES): string {
  return `${workspaceId}/${randomUUID()}/${sanitiseObjectName(objectName, maxKeyBytes - KEY_HEAD_CHARS)}`;
}

function sanitiseObjectName(objectName: string, room: number): string {
  if (objectName === "") throw invalidArgument("objectName is required");
  if (objectName.length > MAX_OBJECT_NAME_CHARS) throw invalidArgument(`objectName must be at most ${MAX_OBJECT_NAME_CHARS} characters`);
  if (objectName.includes("\u0000")) throw invalidArgument("objectName must not contain NUL characters");
  const segments: string[] = [];
  for (const segment of objectName.split(/[/\\]/)) {
    if (segment === "..") throw invalidArgument('objectName must not contain ".." path segments');
    if (segment === "" || segment === ".") continue;
    segments.push(segment.replace(/[^A-Za-z0-9._-]/g, "_").slice(-MAX_SEGMENT_CHARS));
  }
  if (segments.length === 0) throw invalidArgument("objectName must name a file, such as bundle.tar");
  const name = segments.join("/");
  if (name.length <= room) return name;
  // Cut from the front; a segment that the cut leaves as "", "." or ".." goes.
  const kept = name.slice(name.length - room).split("/").filter((s) => s !== "" && s !== "." && s !== "..");
  return kept.length > 0 ? kept.join("/") : "object";
}

/**
 * Whether `key` has the shape of a key Warden made for `workspaceId`. Any other key, made for
 * another workspace or by no one, is answered as a missing object by every reader: the same
 * answer whether or not it exists, so that nothing leaks. On Warden's own disk this check is also
 * what keeps a key inside the storage folder: its segments cannot be "..".
 */
export function isKeyOf(key: string, workspaceId: string): boolean {
  if (key.length > MAX_KEY_BYTES) return false;
  const parts = key.split("/");
  if (parts.length < 3 || parts[0] !== workspaceId || !uuidPattern.test(parts[1]!)) return false;
  return parts.slice(2).every((segment) => segmentPattern.test(segment) && segment !== "." && segment !== "..");
}

/** The sanitised object name at the end of a key: what readers tell the format by. */
export function objectNameOf(key: string): string {
  return key.split("/").slice(2).join("/");
}

/** The longest storage URI worth parsing: a key, a bucket and a scheme, with room to spare. */
export const MAX_STORAGE_URI_CHARS = 2048;

/** A storage URI, split into scheme and the rest; a value that is not one is a 400. */
export function splitStorageUri(storageUri: string): { scheme: string; rest: string } {
  if (storageUri === "") throw invalidArgument("storageUri is required");
  if (storageUri.length > MAX_STORAGE_URI_CHARS) throw invalidArgument(`storageUri must be at most ${MAX_STORAGE_URI_CHARS} characters`);
  const match = /^([A-Za-z][A-Za-z0-9+.-]{0,31}):\/\/(.*)$/s.exec(storageUri);
  if (!match) throw invalidArgument("storageUri must be a URI such as local://… or s3://…, as the presigned URL's answer gave it");
  return { scheme: match[1]!.toLowerCase(), rest: match[2]! };
}
