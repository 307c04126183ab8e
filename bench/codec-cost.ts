import { gunzipSync, gzipSync } from "node:zlib";
import { fromBinary, fromJson, toBinary, toJson, type JsonValue } from "@bufbuild/protobuf";
import { ListProjectsResponseSchema, type ListProjectsResponse } from "../gen/warden/projects/v1/projects_pb.js";
import { messageToRest } from "../src/rest/codec.ts";

export interface CodecCost {
  step: string;
  /** Who pays it, and on which door. */
  paidBy: string;
  microseconds: number;
}

/** Mean microseconds per call of `fn`, after a warm-up, over a bounded number of calls. */
function timeIt(iterations: number, fn: () => unknown): number {
  for (let i = 0; i < Math.min(50, iterations); i++) fn();
  const start = performance.now();
  for (let i = 0; i < iterations; i++) fn();
  return ((performance.now() - start) * 1000) / iterations;
}

/**
 * The serialisation steps of one `ListProjects` answer, timed alone (no I/O, no database), to
 * show where the doors differ in CPU: the facade's in-memory transport encodes and decodes the
 * binary message once more before rendering the REST JSON.
 */
export function listResponseCodecCost(response: ListProjectsResponse, iterations: number): CodecCost[] {
  const bytes = toBinary(ListProjectsResponseSchema, response);
  const protoJsonText = JSON.stringify(toJson(ListProjectsResponseSchema, response));
  const restText = JSON.stringify(messageToRest(ListProjectsResponseSchema, response));
  return [
    {
      step: "binary encode (toBinary)",
      paidBy: "server, Connect binary; server and in-memory transport, REST",
      microseconds: timeIt(iterations, () => toBinary(ListProjectsResponseSchema, response)),
    },
    {
      step: "binary decode (fromBinary)",
      paidBy: "client, Connect binary; facade (in-memory transport), REST",
      microseconds: timeIt(iterations, () => fromBinary(ListProjectsResponseSchema, bytes)),
    },
    {
      step: "gzip + gunzip of the binary body",
      paidBy: "server and client, Connect binary + gzip",
      microseconds: timeIt(iterations, () => gunzipSync(gzipSync(bytes))),
    },
    {
      step: "REST render (messageToRest + JSON.stringify)",
      paidBy: "facade, REST",
      microseconds: timeIt(iterations, () => JSON.stringify(messageToRest(ListProjectsResponseSchema, response))),
    },
    {
      step: "REST parse (JSON.parse)",
      paidBy: "client, REST",
      microseconds: timeIt(iterations, () => JSON.parse(restText)),
    },
    {
      step: "proto JSON render (toJson + JSON.stringify)",
      paidBy: "server, Connect JSON",
      microseconds: timeIt(iterations, () => JSON.stringify(toJson(ListProjectsResponseSchema, response))),
    },
    {
      step: "proto JSON parse (JSON.parse + fromJson)",
      paidBy: "client, Connect JSON",
      microseconds: timeIt(iterations, () => fromJson(ListProjectsResponseSchema, JSON.parse(protoJsonText) as JsonValue)),
    },
  ];
}

export interface ResponseSizes {
  binary: number;
  binaryGzip: number;
  protoJson: number;
  rest: number;
  restGzip: number;
}

/** Body sizes of one answer in bytes, plain and gzipped (connect-node's default level). */
export function responseSizes(response: ListProjectsResponse): ResponseSizes {
  const binary = toBinary(ListProjectsResponseSchema, response);
  const rest = Buffer.from(JSON.stringify(messageToRest(ListProjectsResponseSchema, response)));
  return {
    binary: binary.length,
    binaryGzip: gzipSync(binary).length,
    protoJson: Buffer.byteLength(JSON.stringify(toJson(ListProjectsResponseSchema, response))),
    rest: rest.length,
    restGzip: gzipSync(rest).length,
  };
}
