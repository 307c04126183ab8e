import { stringify } from "yaml";
import { byNaturalKey } from "./plan.ts";
import type { SectionContext } from "./section.ts";
import { sections } from "./sections.ts";

/**
 * The workspace as a configuration file, in a stable order (sections as the file lists them, items
 * by natural key), values at their defaults left out, a provider's key as the environment variable
 * WARDEN_PROVIDER_<NAME>_API_KEY (the key itself never leaves the server). Empty sections are left out.
 */
export async function exportConfig(ctx: SectionContext): Promise<string> {
  const file: Record<string, unknown> = { version: 1 };
  for (const section of sections) {
    const items = (await section.list(ctx)).map((r) => r.item).sort(byNaturalKey(section));
    if (items.length > 0) file[section.name] = items.map((item) => section.toFile(item));
  }
  return stringify(file, { lineWidth: 0 });
}
