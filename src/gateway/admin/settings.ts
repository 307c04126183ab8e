import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { GatewayAdminService } from "../../../gen/warden/gateway/v1/admin_pb.js";
import { emOf, principalOf } from "../../platform/context.ts";
import { permissionDenied } from "../../platform/errors.ts";
import { isInstanceWorkspace } from "../../workspaces/queries.ts";
import { GatewaySettingsEntity } from "../config/entities.ts";
import { boundedInt } from "./validate.ts";

type SettingsRpcs = Pick<ServiceImpl<typeof GatewayAdminService>, "getGatewaySettings" | "updateGatewaySettings">;

/** Gateway-wide settings, one row for every workspace and process. */
export function settingsRpcs(options: { defaultMaxInFlight: number }): SettingsRpcs {
  return {
    async getGatewaySettings(_req, ctx) {
      const row = await emOf(ctx).findOne(GatewaySettingsEntity, { id: 1 });
      return {
        settings: {
          maxInFlight: row?.maxInFlight ?? options.defaultMaxInFlight,
          dateUpdated: row ? timestampFromDate(row.dateUpdated) : undefined,
        },
      };
    },

    async updateGatewaySettings(req, ctx) {
      const em = emOf(ctx);
      // One row for every workspace: a tenant's admin must not throttle everyone else's calls.
      if (!(await isInstanceWorkspace(em, principalOf(ctx).workspaceId))) {
        throw permissionDenied("Gateway-wide settings may be changed only by an admin of the workspace that operates this Warden (the Default workspace).");
      }
      const maxInFlight = boundedInt("maxInFlight", req.maxInFlight, 0, 1, 1_000_000);
      const now = new Date();
      await em.upsert(GatewaySettingsEntity, { id: 1, maxInFlight, dateUpdated: now });
      return { settings: { maxInFlight, dateUpdated: timestampFromDate(now) } };
    },
  };
}
