import type { MikroORM } from "@mikro-orm/postgresql";
import { GatewayWorkspaceSettingsEntity } from "../config/entities.ts";
import type { SecretBox } from "../config/secrets.ts";

/** The judge model a workspace set for its LLM tests, with the gateway key its calls use. */
export interface WorkspaceJudge {
  model: string;
  apiKey: string;
}

/** The workspace's judge, when both its model and key are set. */
export async function workspaceJudge(orm: MikroORM, secrets: SecretBox, workspaceId: string): Promise<WorkspaceJudge | undefined> {
  const row = await orm.em.fork().findOne(GatewayWorkspaceSettingsEntity, { workspaceId });
  if (!row?.judgeModel || !row.judgeKeySealed) return undefined;
  return { model: row.judgeModel, apiKey: secrets.open(row.judgeKeySealed) };
}
