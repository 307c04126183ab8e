import { Migration } from "@mikro-orm/migrations";

/**
 * A PII guardrail may redact instead of block (`action`, BLOCK for every guardrail before), and
 * the request log says what was redacted: `{"input": {"CREDIT_CARD": 1}, "output": {...}}`, types
 * and counts only.
 */
export class Migration20261125080000 extends Migration {
  override up(): void {
    this.addSql(`alter table gateway_guardrail add column action varchar(8) not null default 'BLOCK';`);
    this.addSql(`alter table gateway_request_log add column redactions jsonb null;`);
  }
}
