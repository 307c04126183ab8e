import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { arrayLiteral } from "../src/db/array-literal.ts";

// Read back by PostgreSQL itself: the literal must mean, element by element, what was given.
describe("arrayLiteral", () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
    await client.connect();
  });
  afterAll(() => client.end());

  const readBack = async (literal: string, type: string): Promise<unknown[]> =>
    (await client.query<{ v: unknown }>(`select v from unnest($1::${type}[]) with ordinality as t(v, n) order by n`, [literal])).rows.map((r) => r.v);

  it("keeps text whatever it holds: quotes, backslashes, commas, braces, spaces, the word NULL, nothing at all", async () => {
    const texts = ['say "hi"', "C:\\path\\", "a,b", "{x}", " padded ", "NULL", "", "line\nbreak", "ünï \u{1F600}", '\\"'];
    expect(arrayLiteral(texts.slice(0, 2))).toBe('{"say \\"hi\\"","C:\\\\path\\\\"}');
    expect(await readBack(arrayLiteral(texts), "text")).toEqual(texts);
  });

  it("leaves text bare that needs no quotes, and quotes white space, syntax and every spelling of NULL", async () => {
    const bare = ["0193a1b2-7c4d-7e8f-9a0b-1c2d3e4f5a6b", "gpt-4o-mini", "responses", "ünï", "a.b:c/d"];
    expect(arrayLiteral(bare)).toBe(`{${bare.join(",")}}`);
    const quoted = ["null", "NuLl", "nul", "a\tb", "\u000bv", "\ff", "\rr", "x y", "\u00a0", "{", "}", ",", "a\\b", 'a"b'];
    expect(await readBack(arrayLiteral(quoted), "text")).toEqual(quoted);
    expect(arrayLiteral(["null", "x y"])).toBe('{"null","x y"}');
  });

  it("reads back random text built of the characters the array syntax knows", async () => {
    // A seeded walk, so that a failure repeats.
    let seed = 7;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const alphabet = ['"', "\\", ",", "{", "}", " ", "\t", "\n", "N", "U", "L", "l", "a", "1", "-", "é"];
    const texts = Array.from({ length: 400 }, () => Array.from({ length: random(7) }, () => alphabet[random(alphabet.length)]).join(""));
    expect(await readBack(arrayLiteral(texts), "text")).toEqual(texts);
  });

  it("writes null and undefined as NULL, and a literal NULL string as text", async () => {
    expect(arrayLiteral([null, undefined, "NULL"])).toBe('{NULL,NULL,"NULL"}');
    expect(await readBack(arrayLiteral([null, undefined, "NULL"]), "text")).toEqual([null, null, "NULL"]);
  });

  it("writes numbers and flags that their columns read back exactly", async () => {
    expect(await readBack(arrayLiteral([0, -12, 9_007_199_254_740_991]), "bigint")).toEqual(["0", "-12", "9007199254740991"]);
    expect(await readBack(arrayLiteral([true, false, null]), "boolean")).toEqual([true, false, null]);
  });

  it("an empty list is an empty array", async () => {
    expect(arrayLiteral([])).toBe("{}");
    expect(await readBack("{}", "text")).toEqual([]);
  });
});
