/**
 * The signed-in key. It lives in sessionStorage only: gone when the tab closes, never in a URL,
 * a cookie or localStorage, and never sent anywhere but to this origin's API.
 */
const STORAGE_NAME = "warden.apiKey";

export type Role = "ADMIN" | "MEMBER" | "VIEWER";

/** GET /v1/whoami. */
export interface Caller {
  workspaceId: string;
  workspaceName: string;
  workspaceSlug: string;
  role: Role;
  apiKeyId: string | null;
  apiKeyName: string | null;
  userId: string | null;
}

export function storedKey(): string | null {
  return sessionStorage.getItem(STORAGE_NAME);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(STORAGE_NAME, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(STORAGE_NAME);
}

/** What the key may do, as docs/api.md's role table grants it. Edit controls follow it. */
export function mayWrite(caller: Caller): boolean {
  return caller.role === "ADMIN" || caller.role === "MEMBER";
}

/** The gateway's configuration is changed with the admin permission. */
export function mayAdminister(caller: Caller): boolean {
  return caller.role === "ADMIN";
}
