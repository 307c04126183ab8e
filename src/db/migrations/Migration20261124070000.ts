import { Migration } from "@mikro-orm/migrations";

/**
 * Providers' base URLs are stored without their API's version path, which the gateway adds to
 * every call (src/gateway/admin/validate.ts, providerBaseUrl): those stored with it before were
 * called at /v1/v1/….
 */
export class Migration20261124070000 extends Migration {
  override up(): void {
    this.addSql(`
      update gateway_provider set base_url = regexp_replace(base_url, '/openai(/v1)?$', '') where kind = 'AZURE_OPENAI';
      update gateway_provider set base_url = regexp_replace(base_url, '/v1$', '') where kind in ('ANTHROPIC', 'OPENAI');
    `);
  }
}
