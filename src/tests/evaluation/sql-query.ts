import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { DuckDBInstance, DuckDBTypeId, JSDuckDBValueConverter, StatementType, type DuckDBConnection, type JS } from "@duckdb/node-api";

/**
 * The `sqlQuery` measurement: a user's read-only SELECT over a window's rows, run by DuckDB.
 *
 * Each call opens its own in-memory DuckDB instance and closes it before answering, so calls share
 * nothing: concurrent calls are independent, and nothing a query does outlives it.
 */

export interface SqlQueryLimits {
  /** The query's whole run (load excluded) is interrupted after this. */
  timeoutMs: number;
  /** DuckDB's memory_limit, in bytes. */
  memoryLimitBytes: number;
  /** DuckDB worker threads. */
  threads: number;
}

export type SqlQueryOutcome = { value: number | null } | { error: string };

/** The most fields df takes. */
const maxColumns = 1_000;

/** What load answers when the rows had no field at all. */
const noFields = Symbol("no fields");

/**
 * The rows to load, in batches: only the fields named `columns` (at least as written and in lower
 * case; missing and null values may be left out alike), or every field when `columns` is undefined.
 */
export type RowSource = (columns: readonly string[] | undefined) => AsyncIterable<readonly JsonObject[]>;

/** The types a measured value may have; all become a JS number (BOOLEAN as 1/0). */
const NUMERIC_TYPES: ReadonlySet<DuckDBTypeId> = new Set([
  DuckDBTypeId.BOOLEAN,
  DuckDBTypeId.TINYINT,
  DuckDBTypeId.SMALLINT,
  DuckDBTypeId.INTEGER,
  DuckDBTypeId.BIGINT,
  DuckDBTypeId.HUGEINT,
  DuckDBTypeId.UTINYINT,
  DuckDBTypeId.USMALLINT,
  DuckDBTypeId.UINTEGER,
  DuckDBTypeId.UBIGINT,
  DuckDBTypeId.UHUGEINT,
  DuckDBTypeId.BIGNUM,
  DuckDBTypeId.FLOAT,
  DuckDBTypeId.DOUBLE,
  DuckDBTypeId.DECIMAL,
  DuckDBTypeId.SQLNULL,
]);

/**
 * Loads the rows (batches of rows as the user sent them: JSON objects) into an in-memory DuckDB
 * table `df`, runs the user's query, and answers the first column of the first row.
 *
 * Rows whose fields are all missing leave `df` without columns, which DuckDB cannot have: that is
 * answered with an error (the caller skips empty windows before calling, so this is rare).
 * A failure to read the rows themselves is thrown, not answered, since it says nothing about the
 * query.
 */
export async function runSqlQuery(query: string, rows: RowSource, limits: SqlQueryLimits): Promise<SqlQueryOutcome> {
  // DuckDB takes SQL as C strings, which end at a NUL: the query would be cut short there.
  if (query.includes("\0")) return { error: "The query may not contain a NUL character" };
  const instance = await DuckDBInstance.create(":memory:", sandboxOptions(limits));
  try {
    const connection = await instance.connect();
    try {
      const parsed = await parseSelect(connection, query);
      if ("error" in parsed) return parsed;
      const outcome = await loadAndRun(connection, query, rows(parsed.columns), limits.timeoutMs);
      // The fields loaded are those the query names, as written or in lower case: a field it
      // names in other letters' case, or none of the rows has, is found by loading them all.
      if (parsed.columns !== undefined && (outcome === noFields || ("error" in outcome && outcome.error.startsWith(missingColumn)))) {
        await connection.run("drop table if exists df");
        return answer(await loadAndRun(connection, query, rows(undefined), limits.timeoutMs));
      }
      return answer(outcome);
    } finally {
      connection.closeSync();
    }
  } finally {
    instance.closeSync();
  }
}

/** How DuckDB's binder says a query names a column df does not have. */
const missingColumn = "Binder Error: Referenced column";

async function loadAndRun(connection: DuckDBConnection, query: string, rows: AsyncIterable<readonly JsonObject[]>, timeoutMs: number): Promise<SqlQueryOutcome | typeof noFields> {
  const loaded = await load(connection, rows);
  if (loaded) return loaded;
  return runWithTimeout(connection, query, timeoutMs);
}

function answer(outcome: SqlQueryOutcome | typeof noFields): SqlQueryOutcome {
  return outcome === noFields ? { error: "The rows have no fields, so there is no table df to query" } : outcome;
}

/**
 * An instance that can reach nothing outside itself, set before anything runs and then locked, so
 * that no query can undo it (`SET` fails once the configuration is locked). temp_directory comes
 * first because DuckDB refuses to set it once external access is off; emptying it keeps spilled
 * data off the disk (a query over the memory limit fails instead) and leaves the list of
 * directories still readable without external access empty. lock_configuration comes last, as it
 * refuses every option after it.
 */
function sandboxOptions(limits: SqlQueryLimits): Record<string, string> {
  return {
    temp_directory: "",
    enable_external_access: "false",
    autoinstall_known_extensions: "false",
    autoload_known_extensions: "false",
    allow_community_extensions: "false",
    memory_limit: `${Math.floor(limits.memoryLimitBytes)}B`,
    threads: String(limits.threads),
    lock_configuration: "true",
  };
}

/** A SQL identifier for any name: quoted, with embedded quotes doubled. */
function quoted(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** What a column's non-null values have been so far; the final column type follows from it. */
type Kind = "none" | "number" | "boolean" | "text";

function kindOf(value: JsonValue): Kind {
  if (value === null) return "none";
  if (typeof value === "number") return "number";
  if (typeof value === "boolean") return "boolean";
  return "text";
}

/** A column's kind once it has also seen a value of `kind`: any mix of kinds is text. */
function merged(seen: Kind, kind: Kind): Kind {
  if (seen === "none" || seen === kind) return kind;
  return kind === "none" ? seen : "text";
}

/**
 * A value as the text staged in `df`: a string as it is, any other value as its JSON (which for a
 * number or boolean is its `String`, the faster of the two).
 */
function textOf(value: JsonValue): string {
  if (typeof value === "string") return value;
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/**
 * Loads the rows into `df`, batch by batch, holding one batch at a time.
 *
 * A column's type depends on all its values, so `df` is first filled with every value as VARCHAR
 * (its JSON text, a string as it is) and its columns typed only at the end, by DuckDB casting
 * them in place. Meanwhile only each column's kind so far is kept. Staging as text keeps a column
 * that turns out mixed exactly as the user sent it (a number as its JSON text, not DuckDB's
 * rendering of a DOUBLE), and a JS number's shortest text casts back to the same double.
 * Each batch goes through DuckDB's appender; a batch that brings new fields first adds their
 * columns, as NULL for the rows before. Answers an error when the rows cannot make a table.
 */
async function load(connection: DuckDBConnection, rows: AsyncIterable<readonly JsonObject[]>): Promise<{ error: string } | typeof noFields | undefined> {
  const kinds = new Map<string, Kind>();
  // Rows read before any row had a field (rows without the columns a query names): they are rows
  // of df all the same, all NULL, put in when df is made.
  let fieldless = 0;
  for await (const batch of rows) {
    const added: string[] = [];
    for (const row of batch) {
      for (const [name, value] of Object.entries(row)) {
        const seen = kinds.get(name);
        if (seen === undefined) {
          // DuckDB has no empty identifier, and its C API ends every string at a NUL: such a
          // field could never be named in a query, so it is left out.
          if (name === "" || name.includes("\0")) continue;
          added.push(name);
        }
        kinds.set(name, merged(seen ?? "none", kindOf(value)));
      }
    }
    // Each field is a column, and loading costs rows × columns: a bound keeps it linear in the rows.
    if (kinds.size > maxColumns) return { error: `The rows have more than ${maxColumns} fields; name the fields the query reads instead of *` };
    const failed = await loading(async () => {
      // The first batch with fields creates df: every column it knows of is new.
      const creates = added.length > 0 && kinds.size === added.length;
      if (added.length > 0) await addColumns(connection, added, creates);
      if (creates && fieldless > 0) await connection.run(`insert into df (${quoted(added[0]!)}) select null from range(${fieldless})`);
      if (kinds.size > 0) await append(connection, [...kinds.keys()], batch);
      else fieldless += batch.length;
    });
    if (failed) return failed;
  }
  if (kinds.size === 0) return noFields;
  return loading(async () => {
    for (const [name, kind] of kinds) {
      if (kind === "number" || kind === "boolean") {
        await connection.run(`alter table df alter column ${quoted(name)} set data type ${kind === "number" ? "double" : "boolean"}`);
      }
    }
  });
}

/**
 * DuckDB's work on the rows, its failure answered as the rows' fault: fields that differ only in
 * case (DuckDB's names ignore case), or rows over the memory limit. A failure to read the rows
 * is not caught here, and is thrown to the caller.
 */
async function loading(work: () => Promise<void>): Promise<{ error: string } | undefined> {
  try {
    await work();
    return undefined;
  } catch (error) {
    return { error: `The rows could not be loaded into df: ${firstLine(error)}` };
  }
}

/** Adds columns for new fields, creating `df` with the first ones. */
async function addColumns(connection: DuckDBConnection, names: readonly string[], first: boolean): Promise<void> {
  if (first) {
    await connection.run(`create table df (${names.map((name) => `${quoted(name)} varchar`).join(", ")})`);
    return;
  }
  for (const name of names) await connection.run(`alter table df add column ${quoted(name)} varchar`);
}

async function append(connection: DuckDBConnection, names: readonly string[], batch: readonly JsonObject[]): Promise<void> {
  const appender = await connection.createAppender("df");
  try {
    for (const row of batch) {
      for (const name of names) {
        const value = row[name];
        if (value === undefined || value === null) appender.appendNull();
        else appender.appendVarchar(textOf(value));
      }
      appender.endRow();
    }
  } finally {
    // Closing flushes the rows still buffered.
    appender.closeSync();
  }
}

/**
 * Runs the query, interrupting it once `timeoutMs` has passed. DuckDB runs it off the main thread,
 * so the timer fires on time. DuckDB clears an interrupt when its next step starts (prepare,
 * execute, fetch), so the interrupt is repeated until the query has ended. An interrupted stream
 * reads as ended rather than failed, so once the deadline has passed no answer is trusted.
 */
async function runWithTimeout(connection: DuckDBConnection, query: string, timeoutMs: number): Promise<SqlQueryOutcome> {
  let timedOut = false;
  let repeat: NodeJS.Timeout | undefined;
  const deadline = setTimeout(() => {
    timedOut = true;
    connection.interrupt();
    repeat = setInterval(() => connection.interrupt(), 100);
  }, timeoutMs);
  const stopped = { error: `The query ran longer than ${timeoutMs / 1000} s and was stopped` };
  try {
    const outcome = await firstValue(connection, query);
    return timedOut ? stopped : outcome;
  } catch (error) {
    if (timedOut) return stopped;
    const message = firstLine(error);
    // A refusal by enable_external_access, said in words a user can act on.
    return { error: message.startsWith("Permission Error:") ? `The query may not read files or the network: ${message}` : message };
  } finally {
    clearTimeout(deadline);
    clearInterval(repeat);
  }
}

/**
 * Checks that the query is one SELECT with a numeric first column, from DuckDB's own parse and
 * bind, before running it; then reads only the first row, streaming, so that a query over many
 * rows is never materialized.
 */
async function firstValue(connection: DuckDBConnection, query: string): Promise<SqlQueryOutcome> {
  const prepared = await connection.prepare(query);
  try {
    // Checked again after binding, since it is what keeps the query read-only.
    if (prepared.statementType !== StatementType.SELECT) return { error: "The query must be one SELECT statement" };
    if (prepared.parameterCount > 0) return { error: "The query may not have parameters" };
    if (!NUMERIC_TYPES.has(prepared.columnTypeId(0))) return { error: `The query's first column must be a number; it is ${prepared.columnType(0).toString()}` };
    // A stream ends with no chunk or an empty one; every chunk before has rows.
    const chunk = await (await prepared.stream()).fetchChunk();
    if (!chunk || chunk.rowCount === 0) return { value: null };
    return valueOf(chunk.convertColumnValues(0, JSDuckDBValueConverter)[0] ?? null);
  } finally {
    prepared.destroySync();
  }
}

/** What json_serialize_sql answers: the parsed statements, or why it could not. */
interface SerializedSql {
  error?: boolean;
  error_type?: string;
  error_message?: string;
  statements?: readonly unknown[];
}

/**
 * The query, parsed by DuckDB alone (no table needed): an error unless it is exactly one SELECT
 * (json_serialize_sql serializes SELECT statements only; it sees a PRAGMA as a PRAGMA, where the
 * prepared statement's type would already show the SELECT that DuckDB rewrites some into), else
 * the names it refers to. Only those columns are loaded, which is most of the work over a large
 * window; a `*` or COLUMNS(…), or a query naming no column at all, loads every column.
 */
async function parseSelect(connection: DuckDBConnection, query: string): Promise<{ columns: string[] | undefined } | { error: string }> {
  const reader = await connection.runAndReadAll("select json_serialize_sql($query::varchar)", { query });
  const names = new Set<string>();
  let star = false;
  const parsed = JSON.parse(String(reader.getRows()[0]?.[0]), (_key, value: unknown) => {
    if (typeof value === "object" && value !== null && "class" in value) {
      if (value.class === "STAR") star = true;
      if (value.class === "COLUMN_REF" && "column_names" in value && Array.isArray(value.column_names)) {
        // A qualified name (df.latency, a struct's field) names each part: extra names load nothing.
        for (const name of value.column_names) if (typeof name === "string") names.add(name);
      }
    }
    return value;
  }) as SerializedSql;
  if (parsed.error) return { error: parsed.error_type === "parser" ? `Parser Error: ${parsed.error_message}` : "The query must be one SELECT statement" };
  const count = parsed.statements?.length ?? 0;
  if (count === 0) return { error: "The query is empty" };
  if (count > 1) return { error: `The query must be one SELECT statement; it has ${count}` };
  return { columns: star || names.size === 0 ? undefined : [...names] };
}

function valueOf(value: JS): SqlQueryOutcome {
  if (value === null) return { value: null };
  const number = Number(value);
  // NaN and infinities have no JSON form, and no threshold can compare them.
  if (!Number.isFinite(number)) return { error: `The query's result must be a finite number; it is ${String(value)}` };
  return { value: number };
}

/** DuckDB's message without the lines it adds below it (the query, with a caret). */
function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!.trim();
}
