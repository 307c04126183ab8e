/** The --help text of each command, and of the CLI. */
export const help: Record<string, string> = {
  warden: `Usage: warden <command> [options]

Speaks Connect to a running Warden's management API.

Commands:
  apply FILE        make the workspace match a configuration file (see docs/cli.md)
  export            write the workspace as a configuration file
  keys create       create a gateway key and print its secret, once
  keys list         list the gateway keys
  keys disable      disable a gateway key, by ID or name
  providers list    list the providers
  usage             tokens, requests and cost by key, user, group or model
  logs              the gateway's request log

Environment:
  WARDEN_URL         the management API (default http://127.0.0.1:8080)
  WARDEN_API_KEY     a management API key of the workspace (required)
  WARDEN_TIMEOUT_MS  the deadline of each call (default 30000)

Each command takes --help. Exit status: 0 done, 1 failed, 2 bad file or command line.
`,
  apply: `Usage: warden apply FILE [--dry-run] [--no-prune]

Prints what would change (+ create, ~ update, -/+ replace, - delete), then makes the changes.
  --dry-run    print the plan only
  --no-prune   keep what the workspace holds and the file does not (default: delete it)
`,
  export: `Usage: warden export [--output FILE]

Writes the workspace as a configuration file (to stdout by default). A provider's key is written
as {env: WARDEN_PROVIDER_<NAME>_API_KEY}: the key itself never leaves the server.
`,
  "keys create": `Usage: warden keys create --name NAME [--user USER] [--group GROUP]... [--json]

Creates a gateway key and prints its secret: the only time it is shown.
`,
  "keys list": `Usage: warden keys list [--json]
`,
  "keys disable": `Usage: warden keys disable ID|NAME

Disables a gateway key: the gateway answers 401 to it from then on.
`,
  "providers list": `Usage: warden providers list [--json]
`,
  usage: `Usage: warden usage [--from TIME] [--to TIME] [--by key|user|group|model] [--bucket none|hour|day] [--json]

TIME is an ISO 8601 time (2026-01-31, 2026-01-31T12:00:00Z) or a duration back from now (30m, 2h,
7d). Default: the last 24 hours, by key.
`,
  logs: `Usage: warden logs [--since TIME] [--until TIME] [--model M] [--status CODE] [--key ID|NAME]
                   [--user ID|NAME] [--provider P] [--endpoint E] [--error-type T] [--superseded]
                   [--request-id ID] [--page N] [--per-page N] [--json]

The request log, newest first (default: the last 24 hours, 100 entries a page). --superseded lists
only the attempts a call moved on from (fallbacks).
`,
};
