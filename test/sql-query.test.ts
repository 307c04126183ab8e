/**
 * The `sqlQuery` evaluator: rows loaded into DuckDB as `df`, the user's SELECT run in a sandbox.
 * Answers are worked out by hand on small rows. A query answers only a number, so where a test
 * reads text (column types, staged values) it raises it as an error with DuckDB's `error()`.
 */
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { runSqlQuery, type RowSource, type SqlQueryLimits, type SqlQueryOutcome } from "../src/tests/evaluation/sql-query.ts";

/** Generous: only the timeout tests count on the timeout. */
const limits: SqlQueryLimits = { timeoutMs: 20_000, memoryLimitBytes: 256 * 2 ** 20, threads: 1 };

/** The rows as the caller pages them: batches of `size`. */
async function* batches(rows: readonly JsonObject[], size = 2): AsyncGenerator<readonly JsonObject[]> {
  for (let start = 0; start < rows.length; start += size) yield rows.slice(start, start + size);
}

/** The columns asked for by the last run (undefined: all). */
let asked: readonly string[] | undefined;

/** As the row store answers: only the fields named, as written or in lower case, without nulls; or all of them. */
function source(rows: readonly JsonObject[]): RowSource {
  return (columns) => {
    asked = columns;
    if (columns === undefined) return batches(rows);
    const wanted = new Set(columns.flatMap((c) => [c, c.toLowerCase()]));
    return batches(rows.map((row) => Object.fromEntries(Object.entries(row).filter(([key, value]) => wanted.has(key) && value !== null))));
  };
}

function run(query: string, rows: readonly JsonObject[], overrides: Partial<SqlQueryLimits> = {}): Promise<SqlQueryOutcome> {
  return runSqlQuery(query, source(rows), { ...limits, ...overrides });
}

/** Text that a query computed, read back from the error that `error(text)` raises. */
async function text(query: string, rows: readonly JsonObject[]): Promise<string> {
  const outcome = await run(`select error((${query}))`, rows);
  if (!("error" in outcome) || !outcome.error.startsWith("Invalid Input Error: ")) throw new Error(`Expected text, got ${JSON.stringify(outcome)}`);
  return outcome.error.slice("Invalid Input Error: ".length);
}

const columnsOfDf = "select string_agg(column_name || ' ' || data_type, ', ' order by column_index) from duckdb_columns() where table_name = 'df'";

const calls: JsonObject[] = [
  { latency: 100, output: "xyz", ok: true, user: "u1" },
  { latency: 200, output: "abc", ok: false, user: "u2", cost: 0.5 },
  { latency: 300, output: "taxi", ok: true, user: "u1", cost: 1.25 },
];

describe("sqlQuery: the table df", () => {
  it("answers aggregates over the rows", async () => {
    expect(await run("select avg(latency) from df", calls)).toEqual({ value: 200 });
    expect(await run("select count(*) from df where output like '%x%'", calls)).toEqual({ value: 2 });
    expect(await run("select sum(cost) from df", calls)).toEqual({ value: 1.75 });
    expect(await run("select count(*) from df where cost is null", calls)).toEqual({ value: 1 });
    expect(await run("select count(distinct user) from df", calls)).toEqual({ value: 2 });
    expect(await run("select count(*) filter (where ok) from df", calls)).toEqual({ value: 2 });
    expect(await run("from df select max(latency) where not ok", calls)).toEqual({ value: 200 });
  });

  it("has a column per field in first-seen order, typed by its values", async () => {
    const rows: JsonObject[] = [
      { n: 1, s: "a", b: true, obj: { k: [1, "two"] }, mixed: 1, nulls: null },
      { n: 2.5, s: null, b: null, list: [1, 2], mixed: "one", boolAndNumber: true },
      { b: false, boolAndNumber: 0, late: "z" },
    ];
    expect(await text(columnsOfDf, rows)).toBe(
      "n DOUBLE, s VARCHAR, b BOOLEAN, obj VARCHAR, mixed VARCHAR, nulls VARCHAR, list VARCHAR, boolAndNumber VARCHAR, late VARCHAR",
    );
    // Strings as they are, other values as their JSON text, missing fields as NULL.
    const values = (column: string): Promise<string> => text(`select string_agg(coalesce(${column}, 'NULL'), '|' order by rowid) from df`, rows);
    expect(await values("obj")).toBe('{"k":[1,"two"]}|NULL|NULL');
    expect(await values("mixed")).toBe("1|one|NULL");
    expect(await values("boolAndNumber")).toBe("NULL|true|0");
    expect(await values("list")).toBe("NULL|[1,2]|NULL");
    expect(await values("late")).toBe("NULL|NULL|z");
    expect(await run("select count(*) from df where b", rows)).toEqual({ value: 1 });
  });

  it("adds a field first seen in a later batch, NULL in the rows before", async () => {
    const rows: JsonObject[] = [{ a: 1 }, { a: 2 }, { a: 3 }, { a: 4, b: 10 }, { b: 20 }];
    expect(await text(columnsOfDf, rows)).toBe("a DOUBLE, b DOUBLE");
    expect(await run("select count(*) from df where b is null", rows)).toEqual({ value: 3 });
    expect(await run("select sum(a) + sum(b) from df", rows)).toEqual({ value: 40 });
  });

  it("keeps numbers exactly as sent", async () => {
    const numbers = [0.1, 1e21, 5e-324, 1.7976931348623157e308, -2.5e-7, 123456789012345, 0];
    const rows = numbers.map((x, i) => ({ i, x }));
    for (const [i, x] of numbers.entries()) expect(await run(`select x from df where i = ${i}`, rows)).toEqual({ value: x });
  });

  it("quotes any field name", async () => {
    const rows: JsonObject[] = [{ 'a "quoted" name': 1, "with space": 2, select: 3, "x; drop table df; --": 4, "é🙂": 5 }];
    expect(await run('select "a ""quoted"" name" + "with space" + "select" + "x; drop table df; --" + "é🙂" from df', rows)).toEqual({ value: 15 });
  });

  it("leaves out fields that SQL cannot name", async () => {
    const rows: JsonObject[] = [{ "": 1, "a\u0000b": 2, kept: 3 }];
    expect(await text(columnsOfDf, rows)).toBe("kept DOUBLE");
  });

  it("refuses fields that differ only in case, which DuckDB's names do not tell apart", async () => {
    const outcome = await run("select count(*) from df", [{ latency: 1 }, { Latency: 2 }]);
    expect(outcome).toMatchObject({ error: expect.stringMatching(/^The rows could not be loaded into df: .*Latency/) });
  });

  it("answers an error when no row has a field", async () => {
    const noFields = { error: "The rows have no fields, so there is no table df to query" };
    expect(await run("select count(*) from df", [])).toEqual(noFields);
    expect(await run("select count(*) from df", [{}, {}])).toEqual(noFields);
  });

  it("throws when the rows cannot be read, since that says nothing about the query", async () => {
    async function* failing(): AsyncGenerator<readonly JsonObject[]> {
      yield [{ a: 1 }];
      throw new Error("database went away");
    }
    await expect(runSqlQuery("select count(*) from df", () => failing(), limits)).rejects.toThrow("database went away");
  });

  it("takes at most 1,000 fields, and says how to read fewer", async () => {
    const wide: JsonObject = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`f${i}`, i]));
    expect(await run("select count(*) from df", [wide])).toEqual({ error: "The rows have more than 1000 fields; name the fields the query reads instead of *" });
    expect(await run("select f1000 from df", [wide])).toEqual({ value: 1000 });
  });

  it("loads only the columns the query names; a * or a query naming none loads them all", async () => {
    expect(await run("select avg(LATENCY) from df where df.user = 'u1'", calls)).toEqual({ value: 200 });
    expect(asked).toEqual(["LATENCY", "df", "user"]);
    // A field named in other letters' case, or null in every row, is found by loading every field.
    expect(await run("select count(distinct userid) from df", [{ UserId: "a" }, { UserId: "b" }])).toEqual({ value: 2 });
    expect(asked).toBeUndefined();
    expect(await run("select count(*) from df where cost is null", [{ cost: null, n: 1 }, { cost: null, n: 2 }])).toEqual({ value: 2 });
    expect(asked).toBeUndefined();
    expect(await run("select count(*) from df", calls)).toEqual({ value: 3 });
    expect(asked).toBeUndefined();
    expect(await run("select count(*) from (select * from df) where latency > 100", calls)).toEqual({ value: 2 });
    expect(asked).toBeUndefined();
    expect(await run("select max(columns('lat.*')) from df", calls)).toEqual({ value: 300 });
    expect(asked).toBeUndefined();
  });
});

describe("sqlQuery: the sandbox", () => {
  const oneSelect = "The query must be one SELECT statement";
  const noFiles = /^The query may not read files or the network: Permission Error: /;

  it.each([
    ["copy df to 'out.csv'", oneSelect],
    ["attach 'other.db' as other", oneSelect],
    ["install httpfs", oneSelect],
    ["load httpfs", oneSelect],
    ["create table t as select 1", oneSelect],
    ["insert into df (latency) values (1)", oneSelect],
    ["update df set latency = 0", oneSelect],
    ["delete from df", oneSelect],
    ["drop table df", oneSelect],
    ["pragma table_info('df')", oneSelect],
    ["pragma enable_profiling", oneSelect],
    ["set threads = 8", oneSelect],
    ["reset memory_limit", oneSelect],
    ["explain select 1", oneSelect],
    ["call pragma_version()", oneSelect],
    ["select 1; select 2", `${oneSelect}; it has 2`],
    ["select count(*) from df; drop table df", oneSelect],
    ["", "The query is empty"],
    [" ; -- nothing", "The query is empty"],
    ["select ?", "The query may not have parameters"],
    ["select $1", "The query may not have parameters"],
    ["select 1 \u0000; drop table df", "The query may not contain a NUL character"],
  ])("refuses %j", async (query, error) => {
    expect(await run(query, calls)).toEqual({ error });
  });

  it.each([
    "select count(*) from read_csv('/etc/passwd')",
    "select count(*) from read_text('/etc/hostname')",
    "select count(*) from read_blob('/etc/hostname')",
    "select count(*) from glob('/etc/*')",
    "select count(*) from read_json('http://127.0.0.1:9/x.json')",
    "select count(*) from read_parquet('s3://bucket/x.parquet')",
  ])("refuses to read files or the network: %j", async (query) => {
    expect(await run(query, calls)).toMatchObject({ error: expect.stringMatching(noFiles) });
  });

  it("does not take a file name for a table", async () => {
    expect(await run("select count(*) from '/etc/passwd'", calls)).toEqual({ error: "Catalog Error: Table with name /etc/passwd does not exist!" });
  });

  it("writes nothing, even where a statement would", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "warden-sql-"));
    try {
      const target = path.join(dir, "out.csv").replaceAll("'", "''");
      expect(await run(`copy df to '${target}'`, calls)).toEqual({ error: oneSelect });
      expect(await run(`select count(*) from (copy df to '${target}')`, calls)).toMatchObject({ error: expect.stringMatching(/^Parser Error: /) });
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("runs with the settings locked and bounded", async () => {
    const locked =
      "select (not current_setting('enable_external_access') and not current_setting('autoinstall_known_extensions')" +
      " and not current_setting('autoload_known_extensions') and not current_setting('allow_community_extensions')" +
      " and current_setting('lock_configuration') and current_setting('temp_directory') = ''" +
      " and len(current_setting('allowed_directories')) = 0)::int";
    expect(await run(locked, calls)).toEqual({ value: 1 });
    expect(await run("select current_setting('threads')", calls, { threads: 2 })).toEqual({ value: 2 });
    expect(await text("select value from duckdb_settings() where name = 'memory_limit'", calls)).toBe("256.0 MiB");
  });
});

describe("sqlQuery: limits", () => {
  it("stops a query that runs too long, without blocking the event loop", async () => {
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    try {
      const outcome = await run("select count(*) from range(10000000000000)", calls, { timeoutMs: 300 });
      expect(outcome).toEqual({ error: "The query ran longer than 0.3 s and was stopped" });
    } finally {
      clearInterval(ticker);
    }
    // The query took at least 300 ms; a blocked event loop would have ticked once at most.
    expect(ticks).toBeGreaterThanOrEqual(3);
  });

  it("stops a huge cross join, and runs the next query as usual", async () => {
    const outcome = await run("select sum(a.range * b.range) from range(1000000000) a cross join range(1000) b", calls, { timeoutMs: 300 });
    expect(outcome).toEqual({ error: "The query ran longer than 0.3 s and was stopped" });
    expect(await run("select avg(latency) from df", calls)).toEqual({ value: 200 });
  });

  it("answers an error when a query needs more memory than allowed", async () => {
    const outcome = await run("select count(distinct range::varchar || repeat('x', 50)) from range(5000000)", calls, { memoryLimitBytes: 64 * 2 ** 20 });
    expect(outcome).toMatchObject({ error: expect.stringMatching(/^Out of Memory Error: /) });
    expect(await run("select avg(latency) from df", calls, { memoryLimitBytes: 64 * 2 ** 20 })).toEqual({ value: 200 });
  });

  it("runs calls side by side, each on its own rows", async () => {
    const slow = run("select count(*) from range(10000000000000)", calls, { timeoutMs: 500 });
    const answers = await Promise.all([1, 2, 3, 4].map((k) => run("select sum(v) from df", [{ v: k }, { v: k * 10 }])));
    expect(answers).toEqual([{ value: 11 }, { value: 22 }, { value: 33 }, { value: 44 }]);
    expect(await slow).toEqual({ error: "The query ran longer than 0.5 s and was stopped" });
  });
});

describe("sqlQuery: the answer", () => {
  it.each([
    ["select 42", 42],
    ["select 42::tinyint", 42],
    ["select 9007199254740991::bigint", 9007199254740991],
    ["select 2::hugeint ^ 70", 2 ** 70],
    ["select 12345::uhugeint", 12345],
    ["select 1.25::decimal(10, 2)", 1.25],
    ["select 0.5::float", 0.5],
    ["select true", 1],
    ["select false", 0],
    ["select count(*) from df", 3],
  ])("reads %j as a number", async (query, value) => {
    expect(await run(query, calls)).toEqual({ value });
  });

  it("takes the first column of the first row", async () => {
    expect(await run("select latency, output from df order by latency desc", calls)).toEqual({ value: 300 });
  });

  it("answers no value for NULL or no rows", async () => {
    expect(await run("select null", calls)).toEqual({ value: null });
    expect(await run("select max(cost) from df where latency > 1000", calls)).toEqual({ value: null });
    expect(await run("select latency from df where latency > 1000", calls)).toEqual({ value: null });
  });

  it.each([
    ["select output from df", "VARCHAR"],
    ["select output from df where false", "VARCHAR"],
    ["select current_date", "DATE"],
    ["select [1, 2]", "INTEGER[]"],
    ["select {'a': 1}", 'STRUCT("a" INTEGER)'],
  ])("refuses %j, whose first column is not a number", async (query, type) => {
    expect(await run(query, calls)).toEqual({ error: `The query's first column must be a number; it is ${type}` });
  });

  it("refuses a value that is not finite", async () => {
    expect(await run("select 'nan'::double", calls)).toEqual({ error: "The query's result must be a finite number; it is NaN" });
    expect(await run("select 'inf'::double", calls)).toEqual({ error: "The query's result must be a finite number; it is Infinity" });
  });

  it("answers DuckDB's error on one line", async () => {
    expect(await run("select avg(missing) from df", calls)).toEqual({ error: 'Binder Error: Referenced column "missing" not found in FROM clause!' });
    expect(await run("select avg(latency from df", calls)).toEqual({ error: "Parser Error: syntax error at or near \"from\"" });
    expect(await run("select output::int from df", calls)).toEqual({ error: "Conversion Error: Could not convert string 'xyz' to INT32 when casting from source column output" });
  });
});
