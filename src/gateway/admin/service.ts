import type { ServiceImpl } from "@connectrpc/connect";
import type { GatewayAdminService } from "../../../gen/warden/gateway/v1/admin_pb.js";
import type { SecretBox } from "../config/secrets.ts";
import { accessRuleRpcs } from "./access-rules.ts";
import { guardrailRpcs } from "./guardrails.ts";
import { keyRpcs } from "./keys.ts";
import { priceRpcs } from "./prices.ts";
import { providerRpcs } from "./providers.ts";
import { routingRuleRpcs } from "./routing-rules.ts";
import { settingsRpcs } from "./settings.ts";
import { usageLimitRpcs } from "./usage-limits.ts";
import { workspaceSettingsRpcs } from "./workspace-settings.ts";

export interface GatewayAdminOptions {
  secrets: SecretBox;
  /** The global in-flight cap until an administrator sets one. */
  defaultMaxInFlight: number;
}

/** The gateway's control plane: one file of RPCs per kind of configuration. */
export function createGatewayAdminService(options: GatewayAdminOptions): ServiceImpl<typeof GatewayAdminService> {
  return {
    ...providerRpcs(options.secrets),
    ...routingRuleRpcs(),
    ...keyRpcs(),
    ...accessRuleRpcs(),
    ...guardrailRpcs(),
    ...usageLimitRpcs(),
    ...priceRpcs(),
    ...settingsRpcs(options),
    ...workspaceSettingsRpcs(options.secrets),
  };
}
