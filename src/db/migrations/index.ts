import type { MigrationObject } from "@mikro-orm/core";
import { Migration20261121000000 } from "./Migration20261121000000.ts";
import { Migration20261121010000 } from "./Migration20261121010000.ts";
import { Migration20261121020000 } from "./Migration20261121020000.ts";
import { Migration20261121030000 } from "./Migration20261121030000.ts";
import { Migration20261121040000 } from "./Migration20261121040000.ts";
import { Migration20261124010000 } from "./Migration20261124010000.ts";
import { Migration20261124020000 } from "./Migration20261124020000.ts";
import { Migration20261124030000 } from "./Migration20261124030000.ts";
import { Migration20261124040000 } from "./Migration20261124040000.ts";
import { Migration20261124050000 } from "./Migration20261124050000.ts";
import { Migration20261124060000 } from "./Migration20261124060000.ts";
import { Migration20261124070000 } from "./Migration20261124070000.ts";
import { Migration20261124080000 } from "./Migration20261124080000.ts";
import { Migration20261124090000 } from "./Migration20261124090000.ts";
import { Migration20261125030000 } from "./Migration20261125030000.ts";
import { Migration20261125040000 } from "./Migration20261125040000.ts";
import { Migration20261125050000 } from "./Migration20261125050000.ts";
import { Migration20261125080000 } from "./Migration20261125080000.ts";

/** Every migration, in order. Listed here so that no file system discovery is needed at start. */
export const migrations: MigrationObject[] = [
  { name: "Migration20261121000000", class: Migration20261121000000 },
  { name: "Migration20261121010000", class: Migration20261121010000 },
  { name: "Migration20261121020000", class: Migration20261121020000 },
  { name: "Migration20261121030000", class: Migration20261121030000 },
  { name: "Migration20261121040000", class: Migration20261121040000 },
  { name: "Migration20261124010000", class: Migration20261124010000 },
  { name: "Migration20261124020000", class: Migration20261124020000 },
  { name: "Migration20261124030000", class: Migration20261124030000 },
  { name: "Migration20261124040000", class: Migration20261124040000 },
  { name: "Migration20261124050000", class: Migration20261124050000 },
  { name: "Migration20261124060000", class: Migration20261124060000 },
  { name: "Migration20261124070000", class: Migration20261124070000 },
  { name: "Migration20261124080000", class: Migration20261124080000 },
  { name: "Migration20261124090000", class: Migration20261124090000 },
  { name: "Migration20261125030000", class: Migration20261125030000 },
  { name: "Migration20261125040000", class: Migration20261125040000 },
  { name: "Migration20261125050000", class: Migration20261125050000 },
  { name: "Migration20261125080000", class: Migration20261125080000 },
];
