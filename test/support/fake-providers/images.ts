/**
 * Image checks shared by the three request readers: the media types every provider takes, base64
 * that must decode, and OpenAI's image URLs (an http(s) URL, or a `data:<type>;base64,<data>` URL).
 */

export const IMAGE_MEDIA_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"] as const;
export type ImageMediaType = (typeof IMAGE_MEDIA_TYPES)[number];

export function isImageMediaType(value: unknown): value is ImageMediaType {
  return IMAGE_MEDIA_TYPES.some((type) => type === value);
}

/** Strict base64: not empty, only the standard alphabet, padded to a multiple of 4. Node's decoder skips bad characters, so check first. */
export function isBase64(data: string): boolean {
  return data.length > 0 && data.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(data);
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

/** Anthropic's URL image source: the API fetches it, so it must be http(s). Null when fine, else what is wrong. */
export function urlProblem(url: unknown): string | null {
  if (typeof url !== "string") return "Input should be a valid string";
  return isHttpUrl(url) ? null : `'${url.slice(0, 80)}' is not an http or https URL`;
}

/** An OpenAI image URL (chat image_url.url, responses input_image.image_url). Null when fine, else what is wrong. */
export function imageUrlProblem(url: unknown): string | null {
  if (typeof url !== "string") return "expected a string";
  if (isHttpUrl(url)) return null;
  const match = /^data:([^;,]*)(;base64)?,(.*)$/s.exec(url);
  if (match === null) return "expected an http(s) URL or a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU=')";
  const [, mediaType = "", base64, data = ""] = match;
  if (!isImageMediaType(mediaType)) return `unsupported MIME type '${mediaType}' (expected one of ${IMAGE_MEDIA_TYPES.join(", ")})`;
  if (base64 === undefined) return "the data URL is not base64-encoded";
  if (!isBase64(data)) return "the data URL's base64 data does not decode";
  return null;
}
