import { useState } from "preact/hooks";
import { call } from "../api.ts";
import { TextField } from "../components/fields.tsx";
import { ErrorNotice } from "../components/Notice.tsx";
import { useAction } from "../hooks.ts";
import type { Caller } from "../session.ts";
import { usePageTitle } from "../title.ts";

/**
 * Sign-in with a workspace API key. The key is checked with GET /v1/whoami and, if it answers,
 * kept in this tab's sessionStorage only.
 */
export function SignIn(props: { reason?: string; onSignedIn(key: string, caller: Caller): void }) {
  usePageTitle("Sign in");
  const [key, setKey] = useState("");
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const trimmed = key.trim();
    let caller: Caller | undefined;
    const ok = await action.run(async () => {
      caller = (await call<Caller>("GET", "/v1/whoami", { key: trimmed })).body;
    });
    if (ok && caller) props.onSignedIn(trimmed, caller);
  };
  return (
    <main id="main" class="signin">
      <h1>Warden</h1>
      <form onSubmit={submit} class="card">
        <h2>Sign in</h2>
        {props.reason ? <p class="notice">{props.reason}</p> : null}
        <TextField
          label="Workspace API key"
          type="password"
          value={key}
          onInput={setKey}
          required
          autoComplete="off"
          placeholder="sk-wm-…"
          hint="Kept in this browser tab only, and sent to this server's API only. The first start writes an admin key to .warden/admin-key."
        />
        <ErrorNotice error={action.error} />
        <button type="submit" class="primary" disabled={action.busy || key.trim() === ""}>
          Sign in
        </button>
      </form>
    </main>
  );
}
