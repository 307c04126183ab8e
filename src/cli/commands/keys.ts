import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { GatewayKey } from "../../../gen/warden/gateway/v1/admin_pb.js";
import type { Api } from "../client.ts";
import { json, table } from "../format.ts";
import { UsageError, type Io } from "../io.ts";
import { loadNames } from "../names.ts";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface CreateKeyOptions {
  name: string;
  user?: string;
  groups: string[];
  json: boolean;
}

/** `warden keys create`: prints the secret, the only time it is shown. */
export async function createKey(api: Api, io: Io, options: CreateKeyOptions): Promise<void> {
  const names = await loadNames(api);
  const userId = options.user === undefined ? undefined : names.id("user", options.user);
  if (options.user !== undefined && userId === undefined) throw new UsageError(`--user: no gateway user named "${options.user}"`);
  const groupIds = options.groups.map((group) => {
    const id = names.id("group", group);
    if (id === undefined) throw new UsageError(`--group: no gateway group named "${group}"`);
    return id;
  });
  const { gatewayKey } = await api.admin.createGatewayKey({ name: options.name, userId, groupIds });
  if (options.json) {
    io.stdout.write(json(keyJson(gatewayKey!)));
    return;
  }
  io.stdout.write(`Created key ${options.name} (${gatewayKey!.id}). Its secret, shown only now:\n${gatewayKey!.secret}\n`);
}

export async function listKeys(api: Api, io: Io, asJson: boolean): Promise<void> {
  const [{ items }, names] = await Promise.all([api.admin.listGatewayKeys({}), loadNames(api)]);
  if (asJson) {
    io.stdout.write(json(items.map(keyJson)));
    return;
  }
  io.stdout.write(table(
    ["ID", "NAME", "PREFIX", "USER", "GROUPS", "STATUS", "CREATED"],
    items.map((k) => [
      k.id,
      k.name ?? "-",
      k.keyPrefix,
      k.userId === undefined ? "-" : names.name("user", k.userId),
      k.groupIds.map((g) => names.name("group", g)).join(",") || "-",
      k.disabled ? "disabled" : "active",
      timestampDate(k.dateCreated!).toISOString(),
    ]),
    "No gateway keys.",
  ));
}

/** `warden keys disable ID|NAME`: the gateway refuses the key from then on (401). */
export async function disableKey(api: Api, io: Io, idOrName: string): Promise<void> {
  const { items } = await api.admin.listGatewayKeys({});
  const matches = uuidPattern.test(idOrName) ? items.filter((k) => k.id === idOrName.toLowerCase()) : items.filter((k) => k.name === idOrName);
  if (matches.length === 0) throw new UsageError(`No gateway key ${uuidPattern.test(idOrName) ? "with ID" : "named"} ${idOrName}`);
  if (matches.length > 1) throw new UsageError(`${matches.length} gateway keys are named ${idOrName}: give the ID (warden keys list)`);
  const key = matches[0]!;
  await api.admin.updateGatewayKey({ gatewayKeyId: key.id, disabled: true });
  io.stdout.write(`Disabled key ${key.name ?? key.keyPrefix} (${key.id}).\n`);
}

function keyJson(k: GatewayKey) {
  return {
    id: k.id,
    name: k.name ?? null,
    keyPrefix: k.keyPrefix,
    ...(k.secret === undefined ? {} : { secret: k.secret }),
    userId: k.userId ?? null,
    groupIds: k.groupIds,
    disabled: k.disabled,
    dateCreated: timestampDate(k.dateCreated!).toISOString(),
  };
}
