import { Migration } from "@mikro-orm/migrations";

/**
 * A provider keeps a fingerprint of its key (the first 12 hex digits of its SHA-256), for
 * `warden apply` to compare with the key it holds. Keys stored before stay without one (only
 * their ciphertext is here): the next apply sets the key again, and with it the fingerprint.
 */
export class Migration20261125050000 extends Migration {
  override up(): void {
    this.addSql(`alter table gateway_provider add column api_key_sha256_prefix varchar(12) null;`);
  }
}
