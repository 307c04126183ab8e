import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  Binary,
  Bool,
  Decimal,
  Dictionary,
  DateDay,
  DurationMillisecond,
  Field,
  Float32,
  Float64,
  Int8,
  Int32,
  Int64,
  List,
  Map_,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimeMillisecond,
  TimestampMillisecond,
  TimestampNanosecond,
  Uint64,
  Utf8,
  makeData,
  makeVector,
  tableToIPC,
  vectorFromArray,
} from "apache-arrow";
import { describe, expect, it } from "vitest";
import { dataFileFormat, readRows, type DataFileFormat, type ReadLimits } from "../src/pipelines/files/read-rows.ts";
import { MAX_DEPTH } from "../src/pipelines/files/storable.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

const limits = (over: Partial<ReadLimits> = {}): ReadLimits => ({ maxRows: 10_000_000, maxBytes: 64 * MiB, batchSize: 1000, ...over });

const bytesOf = (input: string | Uint8Array): Uint8Array => (typeof input === "string" ? new TextEncoder().encode(input) : input);

/** The bytes as a storage stream would give them: chunks of `size`, with what happened to it. */
function source(input: string | Uint8Array, size = 64 * KiB) {
  const bytes = bytesOf(input);
  const state = { pulled: 0, closed: false };
  async function* chunks() {
    try {
      for (let i = 0; i < bytes.length; i += size) {
        state.pulled++;
        yield bytes.subarray(i, i + size);
      }
    } finally {
      state.closed = true;
    }
  }
  return { chunks: chunks(), state };
}

async function batchesOf(input: string | Uint8Array, format: DataFileFormat, options: { chunk?: number; limits?: Partial<ReadLimits> } = {}) {
  const batches: JsonObject[][] = [];
  for await (const batch of readRows(source(input, options.chunk).chunks, format, limits(options.limits))) batches.push(batch);
  return batches;
}

const rowsOf = async (input: string | Uint8Array, format: DataFileFormat, options: { chunk?: number; limits?: Partial<ReadLimits> } = {}) =>
  (await batchesOf(input, format, options)).flat();

/** The 400 that reading the file ends with. */
async function refusal(input: string | Uint8Array, format: DataFileFormat, options: { chunk?: number; limits?: Partial<ReadLimits> } = {}) {
  try {
    await batchesOf(input, format, options);
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    return (err as ConnectError).rawMessage;
  }
  throw new Error("the file was read without an error");
}

const utf8Field = (name: string) => new Field(name, new Utf8(), true);

describe("dataFileFormat", () => {
  const text = (s: string) => new TextEncoder().encode(s);
  const arrowStream = tableToIPC(new Table({ a: vectorFromArray([1], new Int32()) }), "stream");
  const arrowFile = tableToIPC(new Table({ a: vectorFromArray([1], new Int32()) }), "file");

  it("goes by the extension, whatever its case and the path before it", () => {
    expect(dataFileFormat("data.csv", text("a,b\n"))).toBe("csv");
    expect(dataFileFormat("ws/123/Data.CSV", text("{"))).toBe("csv");
    for (const name of ["rows.jsonl", "rows.ndjson", "rows.json-lines", "x/rows.JSONL"]) expect(dataFileFormat(name, text("a,b"))).toBe("jsonl");
    for (const name of ["t.arrow", "t.arrows", "t.feather", "t.ipc"]) expect(dataFileFormat(name, new Uint8Array([0x10, 0, 0, 0, 0x0c, 0, 0, 0]))).toBe("arrow");
  });

  it("knows Arrow by its first bytes, in either format and under any name", () => {
    expect(Buffer.from(arrowFile.subarray(0, 8)).toString("latin1")).toBe("ARROW1\0\0");
    expect([...arrowStream.subarray(0, 4)]).toEqual([0xff, 0xff, 0xff, 0xff]);
    for (const name of ["", "upload.bin", "rows.csv", "rows.jsonl", "batch.arrow"]) {
      expect(dataFileFormat(name, arrowFile.subarray(0, 64))).toBe("arrow");
      expect(dataFileFormat(name, arrowStream.subarray(0, 64))).toBe("arrow");
    }
  });

  it("reads a text file under an .arrow name as the text it is, as the Python SDK uploads a CSV file", () => {
    expect(dataFileFormat("batch_data_1718031233.410203_182bd5e5.arrow", text("question,output\nhi,hello\n"))).toBe("csv");
    expect(dataFileFormat("batch.arrow", text('{"a":1}\n'))).toBe("jsonl");
  });

  it("goes by the text without a known extension, and answers undefined when nothing tells", () => {
    expect(dataFileFormat("", text('\uFEFF \r\n {"a": 1}\n'))).toBe("jsonl");
    expect(dataFileFormat("rows.json", text('{"a":1}\n{"a":2}\n'))).toBe("jsonl");
    expect(dataFileFormat("upload", text("a,b\n1,2\n"))).toBe("csv");
    expect(dataFileFormat("rows.txt", text("é,ü\n"))).toBe("csv");
    expect(dataFileFormat("rows.json", text('[{"a":1}]'))).toBeUndefined(); // a JSON document, not lines
    expect(dataFileFormat("", new Uint8Array())).toBeUndefined();
    expect(dataFileFormat("", text(" \n\r\n"))).toBeUndefined();
    expect(dataFileFormat("x.gz", new Uint8Array([0x1f, 0x8b, 0x08, 0]))).toBeUndefined();
    expect(dataFileFormat("", new Uint8Array([0x61, 0xff, 0x62]))).toBeUndefined();
    // A head cut inside a character is still text.
    expect(dataFileFormat("", text("a,é").subarray(0, 3))).toBe("csv");
  });
});

describe("CSV", () => {
  const file =
    "\uFEFFid,question,answer,score,ok,steps,meta,empty\r\n" +
    '1,"What is 2+2, exactly?","He said ""4""\nand left",0.5,True,"[{""name"":""a""}]","{""k"":[1,2]}",\r\n' +
    "002,plain,,-3.5e1,false,\"['x', 'y']\",{broken,\"\"\r\n" +
    "\r\n" +
    '9007199254740993, 12,0x1F,Infinity,TRUE,NaN,1e400,"x,y"\r\n' +
    '0,[],{},1E+2,False,"[1, 2",1.,héllo 😀\r\n';
  const expected = [
    { id: 1, question: "What is 2+2, exactly?", answer: 'He said "4"\nand left', score: 0.5, ok: true, steps: [{ name: "a" }], meta: { k: [1, 2] }, empty: null },
    { id: "002", question: "plain", answer: null, score: -35, ok: false, steps: "['x', 'y']", meta: "{broken", empty: null },
    { id: "9007199254740993", question: " 12", answer: "0x1F", score: "Infinity", ok: "TRUE", steps: "NaN", meta: "1e400", empty: "x,y" },
    { id: 0, question: [], answer: {}, score: 100, ok: false, steps: "[1, 2", meta: "1.", empty: "héllo 😀" },
  ];

  it("reads RFC 4180 (quotes, commas, quotes and line breaks in quotes, CRLF, a BOM) and types the cells", async () => {
    expect(await rowsOf(file, "csv")).toEqual(expected);
  });

  it("reads the same rows whatever the chunks, one byte at a time included", async () => {
    expect(await rowsOf(file, "csv", { chunk: 1 })).toEqual(expected);
    expect(await rowsOf(file, "csv", { chunk: 5 })).toEqual(expected);
    expect(await rowsOf(file.replaceAll("\r\n", "\n"), "csv", { chunk: 3 })).toEqual(expected);
  });

  it("types cells as pandas writes them", async () => {
    const deep = "[".repeat(MAX_DEPTH + 1) + "]".repeat(MAX_DEPTH + 1);
    const cells = ["12", "-3.5", "1e3", "-0.25E-2", "0x1F", " 12", "12 ", "+1", "007", ".5", "1.", "Infinity", "-Infinity", "NaN", "nan", "inf", "True", "true", "False", "false", "TRUE", "yes", "", "null", "[1, 2]", '{"a": {"b": null}}', "[1, 2", "['a', 'b']", "{'a': 1}", "[", "123456789012345678901234567890", "9007199254740991", "1e400", "[[[1]]]", deep];
    const csv = `c\n${cells.map((c) => (c === "" ? '""' : `"${c.replaceAll('"', '""')}"`)).join("\n")}\n`;
    expect((await rowsOf(csv, "csv")).map((row) => row.c)).toEqual([
      12, -3.5, 1000, -0.0025, "0x1F", " 12", "12 ", "+1", "007", ".5", "1.", "Infinity", "-Infinity", "NaN", "nan", "inf", true, true, false, false, "TRUE", "yes", null, "null", [1, 2], { a: { b: null } }, "[1, 2", "['a', 'b']", "{'a': 1}", "[", "123456789012345678901234567890", 9007199254740991, "1e400", [[[1]]], deep,
    ]);
  });

  it("keeps a column named __proto__ as a column", async () => {
    const [row] = await rowsOf("__proto__,b\n1,2\n", "csv");
    expect(Object.keys(row!)).toEqual(["__proto__", "b"]);
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(row!.b).toBe(2);
  });

  it("yields nothing for a header alone, or an empty file", async () => {
    expect(await batchesOf("a,b\r\n", "csv")).toEqual([]);
    expect(await batchesOf("a,b", "csv")).toEqual([]);
    expect(await batchesOf("", "csv")).toEqual([]);
    expect(await batchesOf("\n\n", "csv")).toEqual([]);
  });

  it("refuses a header with an empty, repeated, NUL-holding or overlong name", async () => {
    expect(await refusal(",a,b\n0,1,2\n", "csv")).toBe("Column 1 of the CSV header has no name (a pandas index? write the file with to_csv(index=False))");
    expect(await refusal("a,,b\n", "csv")).toBe("Column 2 of the CSV header has no name");
    expect(await refusal("a,b,a\n1,2,3\n", "csv")).toBe('The CSV header names the column "a" twice');
    expect(await refusal("a,b\u0000c\n", "csv")).toBe('Column 2 of the CSV header, "b\\u0000c", contains a NUL character (U+0000), which PostgreSQL cannot store');
    expect(await refusal(`a,${"n".repeat(1025)}\n`, "csv")).toBe(`Column 2 of the CSV header, "${"n".repeat(80)}…", is longer than 1024 characters`);
  });

  it("refuses a row with more or fewer cells than the header, naming its line", async () => {
    // Line 2 starts a record whose quoted cell runs to line 4; line 5 is blank.
    const head = 'a,b\n1,"x\ny\nz"\n\n';
    expect(await refusal(`${head}1\n`, "csv")).toBe("Line 6 of the CSV file has 1 cell; the header has 2");
    expect(await refusal(`${head}1,2,3\r\n`, "csv")).toBe("Line 6 of the CSV file has 3 cells; the header has 2");
  });

  it("refuses a NUL in a cell, also inside a JSON cell, naming the row, line and column", async () => {
    expect(await refusal("a,b\n1,2\nx,y\u0000\n", "csv")).toBe('Row 2 (line 3), column "b": the value contains a NUL character (U+0000), which PostgreSQL cannot store');
    expect(await refusal('a,b\n1,"[""\\u0000""]"\n', "csv")).toBe('Row 1 (line 2), column "b": the value contains a NUL character (U+0000), which PostgreSQL cannot store');
    expect(await refusal('a,b\n1,"{""k\\u0000"":1}"\n', "csv")).toBe('Row 1 (line 2), column "b": a key in the value contains a NUL character (U+0000), which PostgreSQL cannot store');
  });

  it("refuses bytes that are not UTF-8, naming the line, in whichever chunk they fall", async () => {
    const bad = Buffer.concat([Buffer.from("a,b\n1,é\n2,"), Buffer.from([0xc3, 0x28]), Buffer.from("\n")]);
    for (const chunk of [1, 2, 64 * KiB]) expect(await refusal(bad, "csv", { chunk })).toBe("Line 3 of the file is not valid UTF-8");
    expect(await refusal(Buffer.from([0x61, 0x0a, 0xe2, 0x82]), "csv", { chunk: 1 })).toBe("Line 2 of the file is not valid UTF-8: the file ends inside a character");
    expect(await refusal(Buffer.concat([Buffer.from("a\n"), Buffer.from([0xed, 0xa0, 0x80])]), "csv")).toBe("Line 2 of the file is not valid UTF-8"); // a surrogate
  });

  it("refuses malformed quoting with csv-parse's account of it", async () => {
    expect(await refusal('a,b\n1,"x"y\n', "csv")).toBe(
      'The CSV file could not be parsed: Invalid Closing Quote: got "y" at line 2 instead of delimiter, record delimiter, trimable character (if activated) or comment',
    );
    expect(await refusal('a,b\n1,"open\n', "csv")).toBe("The CSV file could not be parsed: Quote Not Closed: the parsing is finished with an opening quote at line 2");
  });

  it("refuses a file whose header, repeated on every row, would make its rows far larger than the file", async () => {
    // 1,000 names of 1,000 characters (1 MB), then rows of 999 commas: each 1 KB row would be 1 MB of JSON.
    const header = Array.from({ length: 1000 }, (_, i) => String(i).padStart(1000, "c")).join(",");
    const csv = `${header}\n${`${",".repeat(999)}\n`.repeat(1000)}`;
    expect(await refusal(csv, "csv")).toBe(
      "The file's rows would take more than 100 times the file's size as JSON (long column names, or Arrow values repeated on every row); split or reshape the file",
    );
    // The same header over a few rows is fine.
    expect(await rowsOf(`${header}\n${`${",".repeat(999)}\n`.repeat(3)}`, "csv")).toHaveLength(3);
  });
});

describe("JSON Lines", () => {
  const file =
    '\uFEFF{"id": 1, "text": "héllo 😀", "tags": ["a"], "meta": {"k": null}}\r\n' +
    "\n" +
    "  \t \r\n" +
    '{"id":"x","__proto__":{"polluted":true},"n":1.5e3}\n' +
    '{"big":12345678901234567890,"s":"a\\nb\\u00e9"}';
  const expected = [
    { id: 1, text: "héllo 😀", tags: ["a"], meta: { k: null } },
    JSON.parse('{"id":"x","__proto__":{"polluted":true},"n":1500}') as JsonObject,
    { big: 12345678901234567000, s: "a\nbé" },
  ];

  it("reads one object a line, skipping blank lines, with CRLF, a BOM and no final line break", async () => {
    const rows = await rowsOf(file, "jsonl");
    expect(rows).toEqual(expected);
    expect(Object.keys(rows[1]!)).toEqual(["id", "__proto__", "n"]);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it("reads the same rows whatever the chunks", async () => {
    expect(await rowsOf(file, "jsonl", { chunk: 1 })).toEqual(expected);
    expect(await rowsOf(file, "jsonl", { chunk: 7 })).toEqual(expected);
  });

  it("reads a line longer than many chunks", async () => {
    const long = "é".repeat(300_000);
    expect(await rowsOf(`{"a":1}\n{"long":"${long}"}\n{"a":2}\n`, "jsonl", { chunk: 1000 })).toEqual([{ a: 1 }, { long }, { a: 2 }]);
  });

  it("yields nothing for an empty file or blank lines", async () => {
    expect(await batchesOf("", "jsonl")).toEqual([]);
    expect(await batchesOf("\n \r\n\n", "jsonl")).toEqual([]);
  });

  it("refuses a line that is not a JSON object, naming it", async () => {
    for (const line of ["[1, 2]", "null", "3", '"text"', "true"]) {
      expect(await refusal(`{"a":1}\n\n${line}\n{"a":2}\n`, "jsonl")).toBe("Line 3 of the file is not a JSON object");
    }
    expect(await refusal('{"a":1}\n{"a":\n', "jsonl")).toMatch(/^Line 2 of the file is not valid JSON: /);
    expect(await refusal('{"a":1} {"b":2}\n', "jsonl")).toMatch(/^Line 1 of the file is not valid JSON: /);
  });

  it("refuses a NUL in a value, a column name or a nested key, naming the line and column", async () => {
    const why = "a NUL character (U+0000), which PostgreSQL cannot store";
    expect(await refusal('{"a":1}\n{"a":"x\\u0000y"}\n', "jsonl")).toBe(`Line 2, column "a": the value contains ${why}`);
    expect(await refusal('{"a\\u0000":1}\n', "jsonl")).toBe(`Line 1: the column name "a\\u0000" contains ${why}`);
    expect(await refusal('{"m":{"k":[{"x\\u0000":1}]}}\n', "jsonl")).toBe(`Line 1, column "m": a key in the value contains ${why}`);
    expect(await refusal('{"m":["ok",["\\u0000"]]}\n', "jsonl")).toBe(`Line 1, column "m": the value contains ${why}`);
  });

  it("takes values 1,000 levels deep and refuses deeper ones", async () => {
    const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
    const [row] = await rowsOf(`{"deep":${nested(MAX_DEPTH)}}\n`, "jsonl");
    expect(row).toHaveProperty("deep");
    expect(await refusal(`{"deep":${nested(MAX_DEPTH + 1)}}\n`, "jsonl")).toBe(`Line 1 of the file nests values deeper than ${MAX_DEPTH} levels`);
    // Brackets in strings do not count.
    expect(await rowsOf(`{"deep":"${"[".repeat(2000)}"}\n`, "jsonl")).toEqual([{ deep: "[".repeat(2000) }]);
  });

  it("refuses bytes that are not UTF-8, naming the line", async () => {
    const bad = Buffer.concat([Buffer.from('{"a":1}\n{"a":"'), Buffer.from([0xff]), Buffer.from('"}\n')]);
    expect(await refusal(bad, "jsonl", { chunk: 3 })).toBe("Line 2 of the file is not valid UTF-8");
  });
});

describe("Arrow IPC", () => {
  const table = new Table({
    id: vectorFromArray([1n, 9007199254740993n, null], new Int64()),
    score: vectorFromArray([0.25, NaN, Infinity], new Float64()),
    text: vectorFromArray(["héllo 😀", null, ""], new Utf8()),
    ok: vectorFromArray([true, null, false], new Bool()),
    at: vectorFromArray([new Date(1_700_000_000_000), new Date(1_700_000_000_250), null], new TimestampMillisecond()),
    at_ns: vectorFromArray([new Date(1_700_000_000_123), null, new Date(0)], new TimestampNanosecond()),
    tags: vectorFromArray([["a", "b"], [], null], new List(utf8Field("item"))),
    meta: vectorFromArray([{ n: 1, s: "x" }, null, { n: null, s: "z" }], new Struct([new Field("n", new Int32(), true), utf8Field("s")])),
    label: vectorFromArray(["pos", "neg", "pos"], new Dictionary(new Utf8(), new Int32())),
  });
  const expected = [
    { id: 1, score: 0.25, text: "héllo 😀", ok: true, at: 1_700_000_000, at_ns: 1_700_000_000.123, tags: ["a", "b"], meta: { n: 1, s: "x" }, label: "pos" },
    { id: "9007199254740993", score: null, text: null, ok: null, at: 1_700_000_000.25, at_ns: null, tags: [], meta: null, label: "neg" },
    { id: null, score: null, text: "", ok: false, at: null, at_ns: 0, tags: null, meta: { n: null, s: "z" }, label: "pos" },
  ];

  for (const kind of ["file", "stream"] as const) {
    it(`reads the ${kind} format as plain JSON, in chunks of any size`, async () => {
      const bytes = tableToIPC(table, kind);
      expect(await rowsOf(bytes, "arrow")).toEqual(expected);
      expect(await rowsOf(bytes, "arrow", { chunk: 7 })).toEqual(expected);
    });
  }

  it("reads dates, decimals, binary, maps, unsigned and small types, durations and times of day", async () => {
    const entries = new Struct<{ key: Utf8; value: Int32 }>([new Field("key", new Utf8(), false), new Field("value", new Int32(), true)]);
    const mapType = new Map_<Utf8, Int32>(new Field("entries", entries));
    const other = new Table({
      day: vectorFromArray([new Date(Date.UTC(2024, 0, 2)), null], new DateDay()),
      // 123.45 and -0.05 at scale 2: the 128-bit integers 12345 and -5, little-endian words.
      price: makeVector(makeData({ type: new Decimal(2, 10, 128), length: 2, nullCount: 0, data: new Uint32Array([12345, 0, 0, 0, 0xfffffffb, 0xffffffff, 0xffffffff, 0xffffffff]) })),
      blob: vectorFromArray([new Uint8Array([1, 2, 255]), null], new Binary()),
      attrs: vectorFromArray([new Map([["a", 1], ["b", null]]), null], mapType),
      count: vectorFromArray([18446744073709551615n, 5n], new Uint64()),
      ratio: vectorFromArray([1.5, -Infinity], new Float32()),
      took: vectorFromArray([1500n, null], new DurationMillisecond()),
      clock: vectorFromArray([3_600_500, null], new TimeMillisecond()),
      small: vectorFromArray(["a", null], new Dictionary(new Utf8(), new Int8())),
    });
    expect(await rowsOf(tableToIPC(other, "stream"), "arrow")).toEqual([
      { day: 1_704_153_600, price: 123.45, blob: "AQL/", attrs: { a: 1, b: null }, count: "18446744073709551615", ratio: 1.5, took: 1.5, clock: 3600.5, small: "a" },
      { day: null, price: -0.05, blob: null, attrs: null, count: 5, ratio: null, took: null, clock: null, small: null },
    ]);
  });

  it("reads every record batch in order, and batches the rows by batchSize", async () => {
    const part = (from: number, n: number) => new Table({ n: vectorFromArray(Array.from({ length: n }, (_, i) => from + i), new Int32()) });
    const bytes = tableToIPC(part(1, 3).concat(part(4, 2)), "stream");
    expect(await batchesOf(bytes, "arrow", { limits: { batchSize: 2 } })).toEqual([[{ n: 1 }, { n: 2 }], [{ n: 3 }, { n: 4 }], [{ n: 5 }]]);
  });

  it("yields nothing for a table without rows", async () => {
    const empty = new Table({ a: vectorFromArray([], new Int32()) });
    expect(await batchesOf(tableToIPC(empty, "stream"), "arrow")).toEqual([]);
    expect(await batchesOf(tableToIPC(empty, "file"), "arrow")).toEqual([]);
    expect(await batchesOf(new Uint8Array(), "arrow")).toEqual([]);
  });

  it("refuses a NUL in a string, naming the row and column", async () => {
    const t = new Table({ a: vectorFromArray([1, 2], new Int32()), text: vectorFromArray(["ok", "x\u0000"], new Utf8()) });
    expect(await refusal(tableToIPC(t, "stream"), "arrow")).toBe('Row 2, column "text": the value contains a NUL character (U+0000), which PostgreSQL cannot store');
  });

  it("refuses text that is not UTF-8", async () => {
    const text = makeVector(makeData({ type: new Utf8(), length: 1, nullCount: 0, valueOffsets: new Int32Array([0, 2]), data: new Uint8Array([0xc3, 0x28]) }));
    expect(await refusal(tableToIPC(new Table({ text }), "file"), "arrow")).toBe('Arrow column "text" holds text that is not valid UTF-8');
  });

  it("refuses two columns of one name, and a NUL in a column name", async () => {
    const values = makeData({ type: new Int32(), length: 1, nullCount: 0, data: new Int32Array([1]) });
    const twice = new Schema([new Field("x", new Int32()), new Field("x", new Int32())]);
    const batch = new RecordBatch(twice, makeData({ type: new Struct(twice.fields), length: 1, nullCount: 0, children: [values, values] }));
    expect(await refusal(tableToIPC(new Table(batch), "stream"), "arrow")).toBe('The Arrow schema has two fields named "x"');
    const nul = new Table({ "a\u0000": vectorFromArray([1], new Int32()) });
    expect(await refusal(tableToIPC(nul, "stream"), "arrow")).toBe('Field 1 of the Arrow schema, "a\\u0000", contains a NUL character (U+0000), which PostgreSQL cannot store');
  });

  it("refuses bytes that are not Arrow IPC", async () => {
    const stream = tableToIPC(table, "stream");
    expect(await refusal(Buffer.concat([Buffer.from("ARROW1\0\0"), Buffer.alloc(64, 7)]), "arrow")).toMatch(/^The Arrow IPC data could not be read: /);
    expect(await refusal(stream.subarray(0, stream.length - 300), "arrow")).toMatch(/^The Arrow IPC data could not be read: /);
    expect(await refusal("id,text\n1,hi\n", "arrow")).toMatch(/^The Arrow IPC data could not be read: /);
  });

  it("refuses a file whose rows point at one long dictionary value far more often than its size allows", async () => {
    // 100 KB of text once, and 20,000 one-byte indices to it: 2 GB of rows from 120 KB.
    const dictionary = vectorFromArray(["d".repeat(100 * KiB)], new Utf8());
    const label = makeVector(makeData({ type: new Dictionary(new Utf8(), new Int8()), length: 20_000, nullCount: 0, data: new Int8Array(20_000), dictionary }));
    expect(await refusal(tableToIPC(new Table({ label }), "stream"), "arrow")).toBe(
      "The file's rows would take more than 100 times the file's size as JSON (long column names, or Arrow values repeated on every row); split or reshape the file",
    );
  });
});

describe("limits", () => {
  const formats = {
    csv: (n: number) => `a,b\n${"1,x\n".repeat(n)}`,
    jsonl: (n: number) => '{"a":1,"b":"x"}\n'.repeat(n),
    // Record batches of at most 1,000 rows, as pyarrow writes them in chunks.
    arrow: (n: number) => {
      const part = (rows: number) => new Table({ a: vectorFromArray(Array(rows).fill(1), new Int32()), b: vectorFromArray(Array(rows).fill("x"), new Utf8()) });
      const parts = Array.from({ length: Math.ceil(n / 1000) }, (_, i) => part(Math.min(1000, n - i * 1000)));
      return tableToIPC(new Table(parts.flatMap((p) => p.batches)), "stream");
    },
  } satisfies Record<DataFileFormat, (n: number) => string | Uint8Array>;

  for (const [format, make] of Object.entries(formats) as [DataFileFormat, (n: number) => string | Uint8Array][]) {
    it(`${format}: batches of batchSize in file order, up to maxRows rows and no more`, async () => {
      expect((await batchesOf(make(5), format, { limits: { batchSize: 2 } })).map((batch) => batch.length)).toEqual([2, 2, 1]);
      expect(await rowsOf(make(3), format, { limits: { maxRows: 3 } })).toEqual([{ a: 1, b: "x" }, { a: 1, b: "x" }, { a: 1, b: "x" }]);
      expect(await refusal(make(4), format, { limits: { maxRows: 3 } })).toBe("The file has more than 3 rows");
    });

    it(`${format}: stops reading at the chunk that passes maxBytes, and closes the source`, async () => {
      const bytes = bytesOf(make(10_000));
      expect(bytes.length).toBeGreaterThan(20_000);
      const { chunks, state } = source(bytes, 1000);
      const read = async () => {
        for await (const batch of readRows(chunks, format, limits({ maxBytes: 10_500, batchSize: 10 }))) void batch;
      };
      await expect(read()).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: "The file is larger than 10500 bytes" });
      expect(state).toEqual({ pulled: 11, closed: true });
    });

    it(`${format}: a caller that stops early closes the source`, async () => {
      const bytes = bytesOf(make(50_000));
      const { chunks, state } = source(bytes, 100);
      for await (const batch of readRows(chunks, format, limits({ batchSize: 10 }))) {
        expect(batch).toHaveLength(10);
        break;
      }
      expect(state.closed).toBe(true);
      // Read ahead a little (csv-parse's stream buffers 64 KiB), but far from the whole file.
      expect(state.pulled).toBeLessThan(bytes.length / 100 / 2);
    });

    it(`${format}: a failing source's error comes through as it is, not as a 400`, async () => {
      const failure = new Error("storage went away");
      const bytes = bytesOf(make(100));
      async function* failing() {
        yield bytes.subarray(0, 40);
        throw failure;
      }
      const read = async () => {
        for await (const batch of readRows(failing(), format, limits())) void batch;
      };
      await expect(read()).rejects.toBe(failure);
    });
  }
});

/**
 * The CPU time of reading a file, in ms, the least of a few runs. CPU time rather than wall time,
 * so that other processes on a busy machine do not count (test/guardrails-linear.test.ts).
 */
async function cpuTimeOf(input: Uint8Array, format: DataFileFormat, runs: number): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const started = process.cpuUsage();
    try {
      for await (const batch of readRows(source(input).chunks, format, limits())) void batch;
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
    }
    const used = process.cpuUsage(started);
    best = Math.min(best, (used.user + used.system) / 1000);
  }
  return best;
}

/**
 * Four times the input may take at most ten times as long, plus 50 ms for timer and machine noise:
 * linear work gives about 4, quadratic work 16 (and, at 5 MB, minutes).
 */
async function expectLinear(make: (bytes: number) => Uint8Array, format: DataFileFormat): Promise<void> {
  await cpuTimeOf(make(64 * KiB), format, 1); // warm up
  const small = await cpuTimeOf(make(1.25 * MiB), format, 3);
  const large = await cpuTimeOf(make(5 * MiB), format, 2);
  expect(large, `${small.toFixed(1)} ms, then ${large.toFixed(1)} ms for 4 times the bytes`).toBeLessThan(small * 10 + 50);
}

describe("reading takes time linear in the file's size", () => {
  const text = (s: string) => new TextEncoder().encode(s);
  const fill = (unit: string, bytes: number) => unit.repeat(Math.ceil(bytes / unit.length));

  it("CSV: one huge quoted cell full of quotes, commas and line breaks", () =>
    expectLinear((n) => text(`a,b\n1,"${fill('x,""\n', n)}"\n`), "csv"));
  it("CSV: 100,000 small rows at 5 MB", () => expectLinear((n) => text(`id,q,score,ok\n${fill("123456,what is the capital of France?,0.5,True\n", n)}`), "csv"));
  it("CSV: a cell of brackets nested too deep for JSON", () => expectLinear((n) => text(`a\n"${fill("[", n / 2)}${fill("]", n / 2)}"\n`), "csv"));
  it("JSON Lines: a value nested too deep", () => expectLinear((n) => text(`{"a":${fill("[", n / 2)}${fill("]", n / 2)}}\n`), "jsonl"));
  it("JSON Lines: one line of 5 MB", () => expectLinear((n) => text(`{"a":"${fill("x\\\"", n)}"}\n`), "jsonl"));
  it("JSON Lines: 100,000 small rows at 5 MB", () => expectLinear((n) => text(fill('{"q":"what is it?","score":0.5,"id":12}\n', n)), "jsonl"));
  it("JSON Lines: an unfinished line of 5 MB", () => expectLinear((n) => text(`{"a":"${fill("x", n)}`), "jsonl"));
  it("Arrow stream: one string of 5 MB", () =>
    expectLinear((n) => tableToIPC(new Table({ a: vectorFromArray([fill("x", n)], new Utf8()) }), "stream"), "arrow"));
  it("Arrow stream: small rows", () =>
    expectLinear((n) => {
      const rows = Math.floor(n / 24);
      return tableToIPC(new Table({ id: vectorFromArray(Array.from({ length: rows }, (_, i) => BigInt(i)), new Int64()), q: vectorFromArray(Array(rows).fill("what is it?"), new Utf8()) }), "stream");
    }, "arrow"));
});
