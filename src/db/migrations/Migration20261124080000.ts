import { Migration } from "@mikro-orm/migrations";

/**
 * Routing rules with several targets: `targets` holds them, in their order, as
 * `[{"providerName", "upstreamModel", "weight"}]` (src/gateway/config/entities.ts). The rules
 * stored before get one target, from provider_name and upstream_model, which stay: they are kept
 * equal to the first target's. And the provider kind `OPENAI_COMPATIBLE`, longer than kind's 16.
 */
export class Migration20261124080000 extends Migration {
  override up(): void {
    this.addSql(`
      alter table gateway_provider alter column kind type varchar(32);

      alter table gateway_routing_rule add column targets jsonb;
      update gateway_routing_rule
        set targets = jsonb_build_array(jsonb_build_object('providerName', provider_name, 'upstreamModel', upstream_model, 'weight', null));
      alter table gateway_routing_rule alter column targets set not null;
      alter table gateway_routing_rule add constraint gateway_routing_rule_targets_check
        check (jsonb_typeof(targets) = 'array' and jsonb_array_length(targets) between 1 and 8);
    `);
  }
}
