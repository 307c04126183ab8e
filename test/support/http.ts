/** A plain HTTP client for REST /v1, as an Openlayer script would use it. */

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body; undefined when the body is empty. */
  body: unknown;
  text: string;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  /** Sent as is, instead of JSON-encoding `body`. */
  rawBody?: string;
  headers?: Record<string, string>;
}

export function client(baseUrl: string, defaultKey: string) {
  return async function call(method: string, path: string, options: CallOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? defaultKey : options.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let body: string | undefined = options.rawBody;
    if (body === undefined && options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers["content-type"] ??= "application/json";
    const response = await fetch(baseUrl + path, { method, headers, body });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined, text };
  };
}

export type Call = ReturnType<typeof client>;

/** The error body of the contract, for exact assertions. */
export function errorBody(message: string, code: string) {
  return { error: message, message, code };
}
