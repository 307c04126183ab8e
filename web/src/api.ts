import { storedKey } from "./session.ts";

/** An answer of the API that is not a success, with the contract's error body. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, message: string, code: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export interface Answer<T> {
  body: T;
  /** Whether the list has a page after this one (the API's x-next header). */
  hasNext: boolean;
}

/** Told when the API refuses the key (401): the session is over. */
let onUnauthenticated: () => void = () => {};

export function whenUnauthenticated(handler: () => void): void {
  onUnauthenticated = handler;
}

/**
 * A call to REST /v1 on the origin that served the console, as every other client calls it. The
 * key rides in the Authorization header, never in a URL. `key` overrides the session's (sign-in).
 */
export async function call<T>(method: string, path: string, options: { body?: unknown; key?: string } = {}): Promise<Answer<T>> {
  const key = options.key ?? storedKey();
  const headers: Record<string, string> = { accept: "application/json" };
  if (key) headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    // Nothing of the browser's own (cookies, HTTP auth) is sent: the key is the only credential.
    credentials: "omit",
    cache: "no-store",
  });
  const body = parsed(await response.text());
  if (!response.ok) {
    const error = body as { message?: string; code?: string } | undefined;
    if (response.status === 401 && options.key === undefined) onUnauthenticated();
    throw new ApiError(response.status, error?.message ?? `${response.status} ${response.statusText}`, error?.code ?? "unknown");
  }
  return { body: body as T, hasNext: response.headers.has("x-next") };
}

/** The JSON of an answer; undefined when it has none, or is not JSON (a proxy's error page). */
function parsed(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export const get = <T>(path: string) => call<T>("GET", path).then((answer) => answer.body);

/** A path with its query: undefined and empty values are left out. */
export function withQuery(path: string, query: Record<string, string | number | boolean | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== "") params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}
