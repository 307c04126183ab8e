import type { MikroORM } from "@mikro-orm/postgresql";
import { Role } from "../../gen/warden/api/v1/common_pb.js";
import { enumValue } from "../platform/enums.ts";
import type { Authenticator } from "../platform/interceptors.ts";
import type { Principal } from "../platform/principal.ts";
import { ApiKeyEntity } from "./entities.ts";
import { hashKey } from "./keys.ts";

/** How stale `dateLastUsed` may get, so that reads do not each cost a write. */
const lastUsedResolutionMs = 60_000;

/** Resolves workspace API keys. A revoked key resolves to nothing. */
export class ApiKeyAuthenticator implements Authenticator {
  private readonly lastTouched = new Map<string, number>();
  private readonly orm: MikroORM;

  constructor(orm: MikroORM) {
    this.orm = orm;
  }

  async authenticate(secret: string): Promise<Principal | null> {
    const em = this.orm.em.fork();
    const key = await em.findOne(ApiKeyEntity, { keyHash: hashKey(secret), dateRevoked: null });
    if (!key) return null;
    this.touch(key.id);
    return {
      workspaceId: key.workspaceId,
      role: enumValue(Role, key.role),
      userId: key.userId ?? null,
      apiKeyId: key.id,
      displayName: key.name ?? null,
    };
  }

  private touch(keyId: string): void {
    const now = Date.now();
    if (now - (this.lastTouched.get(keyId) ?? 0) < lastUsedResolutionMs) return;
    this.lastTouched.set(keyId, now);
    void this.orm.em.fork()
      .nativeUpdate(ApiKeyEntity, { id: keyId }, { dateLastUsed: new Date(now) })
      .catch(() => this.lastTouched.delete(keyId));
  }
}
