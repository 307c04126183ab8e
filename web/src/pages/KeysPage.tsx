import { useState } from "preact/hooks";
import { call, get } from "../api.ts";
import { useCaller } from "../caller.ts";
import { TextField } from "../components/fields.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { SecretOnce } from "../components/SecretOnce.tsx";
import { formatDate } from "../format.ts";
import { useAction, useLoad } from "../hooks.ts";
import { mayAdminister } from "../session.ts";
import { usePageTitle } from "../title.ts";
import type { GatewayKey, List, Named } from "../types.ts";

/** Gateway keys: listed for every role; created (the secret shown once), disabled and enabled by admins. */
export function KeysPage() {
  usePageTitle("Gateway keys");
  const admin = mayAdminister(useCaller());
  const keys = useLoad(() => get<List<GatewayKey>>("/v1/gateway/keys"), []);
  const users = useLoad(() => get<List<Named>>("/v1/gateway/users"), []);
  const [name, setName] = useState("");
  const [secret, setSecret] = useState<{ name: string; value: string }>();
  const create = useAction();
  const toggle = useAction();
  const userName = (id: string | null) => (id ? (users.data?.items.find((u) => u.id === id)?.name ?? id) : "—");

  const submit = async (event: Event) => {
    event.preventDefault();
    await create.run(async () => {
      const created = (await call<GatewayKey>("POST", "/v1/gateway/keys", { body: { name: name.trim() || undefined } })).body;
      setSecret({ name: created.name ?? created.keyPrefix, value: created.secret! });
      setName("");
      keys.reload();
    });
  };
  const setDisabled = (key: GatewayKey, disabled: boolean) =>
    toggle.run(async () => {
      await call("PATCH", `/v1/gateway/keys/${key.id}`, { body: { disabled } });
      keys.reload();
    });

  return (
    <>
      <h1>Gateway keys</h1>
      <p class="lead">Applications call the gateway with these keys (docs/gateway.md). A disabled key is refused at once.</p>
      {secret ? <SecretOnce title={`The secret of ${secret.name}`} secret={secret.value} onDone={() => setSecret(undefined)} /> : null}
      {admin ? (
        <form class="card inline-form" onSubmit={submit} aria-labelledby="new-key-title">
          <h2 id="new-key-title">New key</h2>
          <TextField label="Name" value={name} onInput={setName} placeholder="e.g. support-bot" />
          <ErrorNotice error={create.error} />
          <div class="actions">
            <button type="submit" class="primary" disabled={create.busy}>
              Create key
            </button>
          </div>
        </form>
      ) : null}
      <ErrorNotice error={keys.error ?? toggle.error} />
      {!keys.data ? (
        keys.loading ? <Loading /> : null
      ) : keys.data.items.length === 0 ? (
        <Empty>No gateway key yet.</Empty>
      ) : (
        <div class="table-wrap">
          <table data-testid="keys">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Owner</th>
                <th scope="col">State</th>
                <th scope="col">Created</th>
                {admin ? (
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {keys.data.items.map((key) => (
                <tr key={key.id}>
                  <th scope="row">{key.name ?? "—"}</th>
                  <td>
                    <code>{key.keyPrefix}…</code>
                  </td>
                  <td>{userName(key.userId)}</td>
                  <td>{key.disabled ? <span class="status status-failing">disabled</span> : <span class="status status-passing">active</span>}</td>
                  <td>{formatDate(key.dateCreated)}</td>
                  {admin ? (
                    <td>
                      <button type="button" class="small-button" disabled={toggle.busy} onClick={() => setDisabled(key, !key.disabled)}>
                        {key.disabled ? "Enable" : "Disable"}
                        <span class="visually-hidden"> {key.name ?? key.keyPrefix}</span>
                      </button>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
