import { useEffect, useState } from "preact/hooks";

/** The console's path on the server (src/console/static.ts); links.app points below it. */
export const BASE = "/app";

const CHANGE = "warden:navigate";

export interface Location {
  /** The path within the console, from "/". */
  path: string;
  query: URLSearchParams;
}

function current(): Location {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) || "/" : "/";
  return { path: path.length > 1 ? path.replace(/\/$/, "") : path, query: new URLSearchParams(location.search) };
}

/** The location, followed as it changes (links, back and forward). */
export function useLocation(): Location {
  const [here, setHere] = useState(current);
  useEffect(() => {
    const update = () => setHere(current());
    addEventListener("popstate", update);
    addEventListener(CHANGE, update);
    return () => {
      removeEventListener("popstate", update);
      removeEventListener(CHANGE, update);
    };
  }, []);
  return here;
}

/** Goes to a path within the console, with history (or in place of the current entry). */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = BASE + to;
  if (options.replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  dispatchEvent(new Event(CHANGE));
}

/** Changes some query parameters of the current page, in place. */
export function setQuery(changes: Record<string, string | undefined>): void {
  const { path, query } = current();
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined || value === "") query.delete(name);
    else query.set(name, value);
  }
  const text = query.toString();
  navigate(text ? `${path}?${text}` : path, { replace: true });
}

/** The parameters of `pattern` ("/projects/:id") in `path`, or null when it does not match. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split("/");
  const have = path.split("/");
  if (want.length !== have.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i]!.startsWith(":")) {
      const value = decoded(have[i]!);
      if (value === undefined) return null;
      params[want[i]!.slice(1)] = value;
    } else if (want[i] !== have[i]) return null;
  }
  return params;
}

/** A path segment decoded, or undefined when its escapes are broken (the page is then not found). */
function decoded(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
