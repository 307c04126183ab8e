import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  UpdateGatewayWorkspaceSettingsRequestSchema,
  type GatewayAdminService,
  type GatewayWorkspaceSettingsSchema,
} from "../../../gen/warden/gateway/v1/admin_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { invalidArgument } from "../../platform/errors.ts";
import { fieldsToUpdate } from "../../platform/update-mask.ts";
import { optionalText } from "../../platform/validate.ts";
import { GatewayWorkspaceSettingsEntity, type GatewayWorkspaceSettingsRow } from "../config/entities.ts";
import type { SecretBox } from "../config/secrets.ts";
import { gatewayKeyPrefix } from "../keys.ts";
import { trafficPipeline } from "./keys.ts";

type WorkspaceSettingsRpcs = Pick<ServiceImpl<typeof GatewayAdminService>, "getGatewayWorkspaceSettings" | "updateGatewayWorkspaceSettings">;

function settingsMessage(row: GatewayWorkspaceSettingsRow | null): MessageInitShape<typeof GatewayWorkspaceSettingsSchema> {
  return {
    inferencePipelineId: row?.inferencePipelineId ?? undefined,
    judgeModel: row?.judgeModel ?? undefined,
    judgeKeySet: row?.judgeKeySealed != null,
    dateUpdated: row ? timestampFromDate(row.dateUpdated) : undefined,
  };
}

/**
 * The gateway settings of one workspace, which its own admins set (unlike GatewaySettings, which
 * are the instance's): the inference pipeline that the traffic of its keys is written to when a key
 * names none, and the judge model (and the gateway key it is called with) of its LLM tests.
 */
export function workspaceSettingsRpcs(secrets: SecretBox): WorkspaceSettingsRpcs {
  return {
    async getGatewayWorkspaceSettings(_req, ctx) {
      const row = await emOf(ctx).findOne(GatewayWorkspaceSettingsEntity, { workspaceId: principalOf(ctx).workspaceId });
      return { settings: settingsMessage(row) };
    },

    async updateGatewayWorkspaceSettings(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const fields = fieldsToUpdate(UpdateGatewayWorkspaceSettingsRequestSchema, req, ["inference_pipeline_id", "judge_model", "judge_key"]);
      const current = await em.findOne(GatewayWorkspaceSettingsEntity, { workspaceId });
      const row: GatewayWorkspaceSettingsRow = {
        workspaceId,
        inferencePipelineId: current?.inferencePipelineId ?? null,
        judgeModel: current?.judgeModel ?? null,
        judgeKeySealed: current?.judgeKeySealed ?? null,
        dateUpdated: new Date(),
      };
      if (fields.has("inference_pipeline_id")) {
        row.inferencePipelineId = req.inferencePipelineId === undefined ? null : await trafficPipeline(em, workspaceId, req.inferencePipelineId);
      }
      if (fields.has("judge_model")) row.judgeModel = optionalText("judgeModel", req.judgeModel, 255) ?? null;
      if (fields.has("judge_key")) {
        if (req.judgeKey !== undefined && (!req.judgeKey.startsWith(gatewayKeyPrefix) || req.judgeKey.length > 256)) {
          throw invalidArgument(`judgeKey must be a gateway key of this instance (${gatewayKeyPrefix}…)`);
        }
        row.judgeKeySealed = req.judgeKey === undefined ? null : secrets.seal(req.judgeKey);
      }
      await em.upsert(GatewayWorkspaceSettingsEntity, row);
      return { settings: settingsMessage(row) };
    },
  };
}
