import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { UpdateGatewayWorkspaceSettingsRequestSchema, type GatewayAdminService } from "../../../gen/warden/gateway/v1/admin_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { fieldsToUpdate } from "../../platform/update-mask.ts";
import { GatewayWorkspaceSettingsEntity } from "../config/entities.ts";
import { trafficPipeline } from "./keys.ts";

type WorkspaceSettingsRpcs = Pick<ServiceImpl<typeof GatewayAdminService>, "getGatewayWorkspaceSettings" | "updateGatewayWorkspaceSettings">;

/**
 * The gateway settings of one workspace, which its own admins set (unlike GatewaySettings, which
 * are the instance's): for now, the inference pipeline that the traffic of its keys is written to
 * when a key names none.
 */
export function workspaceSettingsRpcs(): WorkspaceSettingsRpcs {
  return {
    async getGatewayWorkspaceSettings(_req, ctx) {
      const row = await emOf(ctx).findOne(GatewayWorkspaceSettingsEntity, { workspaceId: principalOf(ctx).workspaceId });
      return {
        settings: {
          inferencePipelineId: row?.inferencePipelineId ?? undefined,
          dateUpdated: row ? timestampFromDate(row.dateUpdated) : undefined,
        },
      };
    },

    async updateGatewayWorkspaceSettings(req, ctx) {
      const em = emOf(ctx);
      const workspaceId = principalOf(ctx).workspaceId;
      const fields = fieldsToUpdate(UpdateGatewayWorkspaceSettingsRequestSchema, req, ["inference_pipeline_id"]);
      const current = await em.findOne(GatewayWorkspaceSettingsEntity, { workspaceId });
      let inferencePipelineId = current?.inferencePipelineId ?? null;
      if (fields.has("inference_pipeline_id")) {
        inferencePipelineId = req.inferencePipelineId === undefined ? null : await trafficPipeline(em, workspaceId, req.inferencePipelineId);
      }
      const now = new Date();
      await em.upsert(GatewayWorkspaceSettingsEntity, { workspaceId, inferencePipelineId, dateUpdated: now });
      return { settings: { inferencePipelineId: inferencePipelineId ?? undefined, dateUpdated: timestampFromDate(now) } };
    },
  };
}
