import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { respond, type NodeServerRequest, type NodeServerResponse } from "../platform/http.ts";

/** Where the console is served: `links.app` points below it. */
export const CONSOLE_PATH = "/app";

/** The console's build output (web/dist, committed; docs/console.md says why). */
export const CONSOLE_DIST = fileURLToPath(new URL("../../web/dist/", import.meta.url));

/**
 * The console talks to its own origin only, runs no inline script or style, and may not be framed:
 * what a browser enforces here is what an air-gapped deployment needs anyway.
 */
const CONTENT_SECURITY_POLICY = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
};

/** Types worth compressing; images and fonts already are. */
const COMPRESSIBLE = new Set([".html", ".js", ".css", ".svg", ".json", ".txt"]);

interface StaticFile {
  body: Buffer;
  /** The gzip of `body`, when it is smaller. */
  gzip: Buffer | undefined;
  contentType: string;
  etag: string;
  cacheControl: string;
}

/**
 * Serves the console: its files, kept in memory (a few hundred kilobytes), under /app/. Paths that
 * name no file and look like a page (no extension, not under assets/) get index.html, so that a
 * link such as /app/projects/{id} opens the page it names.
 */
export async function createConsoleHandler(dir: string = CONSOLE_DIST) {
  const files = await loadFiles(dir);

  /** Answers the request when it is the console's (true), or leaves it alone (false). */
  return function handleConsole(req: NodeServerRequest, res: NodeServerResponse): boolean {
    const url = req.url ?? "/";
    const query = url.indexOf("?");
    const pathname = query === -1 ? url : url.slice(0, query);
    if (pathname !== CONSOLE_PATH && !pathname.startsWith(`${CONSOLE_PATH}/`)) return false;
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    const method = req.method ?? "GET";
    if (method !== "GET" && method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      respond(res, 405, "text/plain; charset=utf-8", `${method} is not allowed on the console; use GET or HEAD\n`);
      return true;
    }
    if (pathname === CONSOLE_PATH) {
      res.setHeader("location", `${CONSOLE_PATH}/${query === -1 ? "" : url.slice(query)}`);
      respond(res, 308, undefined, "");
      return true;
    }
    const name = relativeName(pathname.slice(CONSOLE_PATH.length + 1));
    if (name === undefined) {
      respond(res, 400, "text/plain; charset=utf-8", "Bad path\n");
      return true;
    }
    const index = files.get("index.html");
    if (!index) {
      respond(res, 503, "text/plain; charset=utf-8", "The console is not built: run npm run console:build\n");
      return true;
    }
    const file = files.get(name) ?? (looksLikePage(name) ? index : undefined);
    if (!file) {
      respond(res, 404, "text/plain; charset=utf-8", "Not found\n");
      return true;
    }
    send(req, res, file);
    return true;
  };
}

/**
 * The name of a file below the console's folder, or undefined when the path could reach outside
 * it or is not a plain name: `..` and `.` segments (raw or percent-encoded), backslashes, NUL,
 * empty segments, undecodable escapes. Files are looked up in a map, never on disk, so nothing
 * outside the folder is reachable anyway; these are refused so that no odd path means anything.
 */
function relativeName(raw: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  if (decoded === "") return "index.html";
  if (/[\\\0]/.test(decoded)) return undefined;
  const segments = decoded.split("/");
  // A trailing slash (/app/projects/) is the page without it.
  if (segments.at(-1) === "") segments.pop();
  if (segments.some((segment) => segment === "" || segment === "." || segment === "..")) return undefined;
  return segments.join("/");
}

/** A page of the app (served index.html) rather than a file that is missing (a 404). */
function looksLikePage(name: string): boolean {
  return !name.startsWith("assets/") && !path.posix.basename(name).includes(".");
}

function send(req: NodeServerRequest, res: NodeServerResponse, file: StaticFile): void {
  res.setHeader("cache-control", file.cacheControl);
  res.setHeader("etag", file.etag);
  res.setHeader("vary", "accept-encoding");
  if (req.headers["if-none-match"] === file.etag) {
    res.statusCode = 304;
    res.end();
    return;
  }
  const gzip = file.gzip && /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
  const body = gzip ? file.gzip! : file.body;
  if (gzip) res.setHeader("content-encoding", "gzip");
  res.statusCode = 200;
  res.setHeader("content-type", file.contentType);
  res.setHeader("content-length", body.length);
  // Node leaves the body out of a HEAD answer itself.
  res.end(body);
}

async function loadFiles(dir: string): Promise<Map<string, StaticFile>> {
  const files = new Map<string, StaticFile>();
  let entries: string[];
  try {
    entries = await readdir(dir, { recursive: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return files;
    throw err;
  }
  for (const entry of entries) {
    const name = entry.split(path.sep).join("/");
    const extension = path.posix.extname(name);
    const contentType = CONTENT_TYPES[extension];
    // Folders, and anything the build should not have made.
    if (!contentType) continue;
    const body = await readFile(path.join(dir, entry));
    const gzip = COMPRESSIBLE.has(extension) ? gzipSync(body, { level: 9 }) : undefined;
    files.set(name, {
      body,
      gzip: gzip && gzip.length < body.length ? gzip : undefined,
      contentType,
      etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`,
      // Vite names every asset by its content's hash: a new build is new names, never new bytes.
      cacheControl: name.startsWith("assets/") ? "public, max-age=31536000, immutable" : "no-cache",
    });
  }
  return files;
}
