import type { DescField, DescMessage, JsonObject, JsonValue, MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { BodyTooLarge, readBody, respond, respondJson, type NodeServerRequest, type NodeServerResponse } from "../platform/http.ts";
import { asConnectError, codeName, httpStatusOf, invalidArgument, retryIsFutile } from "../platform/errors.ts";
import type { Logger } from "../platform/logger.ts";
import { baseUrlOf, forwardedHost, forwardedProto, validHost } from "../platform/urls.ts";
import {
  decodeMessage,
  fieldRules,
  messageToRest,
  queryValueToProtoJson,
  restBodyToProtoJson,
} from "./codec.ts";
import type { UnaryCall } from "./in-process.ts";
import type { Route, RouteTable } from "./route-table.ts";

export interface RestFacadeOptions {
  routes: RouteTable;
  /** Reaches the RPCs in process, through the same interceptors as the network doors. */
  call: UnaryCall;
  maxBodyBytes: number;
  /** The cap of routes marked `large_body` (data-stream), which carry up to 1,000 rows. */
  largeBodyBytes: number;
  publicUrl: string | undefined;
  logger: Logger;
}

/** Request headers that the RPC sees; the rest stay at the REST door. */
const forwardedHeaders = ["authorization", "x-api-key", "x-forwarded-host", "x-forwarded-proto", "x-request-id", "traceparent", "tracestate"];

/**
 * REST `/v1`: matches the route table, turns path, query and body into the RPC's request
 * message, calls the RPC, and renders its answer or its error in the contract's JSON.
 */
export function createRestFacade(options: RestFacadeOptions) {
  const { routes, call, publicUrl, logger } = options;

  return async function handleRest(req: NodeServerRequest, res: NodeServerResponse): Promise<void> {
    // An absolute-form target ("GET http://[::1/v1 HTTP/1.1") reaches us as is, and may not parse.
    const parsed = URL.parse(req.url ?? "/", "http://placeholder");
    const url = parsed ?? new URL("http://placeholder/");
    const method = (req.method ?? "GET").toUpperCase();
    let maxBodyBytes = options.maxBodyBytes;
    try {
      if (!parsed) throw invalidArgument("The request target is not a valid URL");
      // HEAD is answered as GET; Node leaves the body out.
      const match = routes.match(method === "HEAD" ? "GET" : method, url.pathname);
      if (match.kind === "none") {
        throw new ConnectError(`No route for ${method} ${url.pathname}`, Code.NotFound);
      }
      if (match.kind === "wrong-method") {
        res.setHeader("allow", match.allow.join(", "));
        const message = `${method} is not allowed on ${url.pathname}; use ${match.allow.join(", ")}`;
        sendError(res, new ConnectError(message, Code.InvalidArgument), 405);
        return;
      }
      const { route, params } = match;
      if (route.rule.largeBody) maxBodyBytes = options.largeBodyBytes;
      const input = await requestMessage(route, params, url.searchParams, req, maxBodyBytes);
      const header = new Headers();
      for (const name of forwardedHeaders) {
        const value = req.headers[name];
        if (typeof value === "string") header.set(name, value);
      }
      // The facade is a proxy in front of the RPC: it says where the caller reached it, for
      // absolute URLs, unless a proxy further out already did. HTTP/2 has :authority, not Host.
      // A forwarded value that is not a host or a protocol is dropped, and ours is used.
      const authority = req.headers[":authority"];
      const host = forwardedHost(header.get("x-forwarded-host")) ?? validHost(req.headers.host ?? (typeof authority === "string" ? authority : undefined));
      header.delete("x-forwarded-host");
      if (host) header.set("x-forwarded-host", host);
      header.set("x-forwarded-proto", forwardedProto(header.get("x-forwarded-proto")) ?? "http");
      const output = await call(route.rpc, header, input);
      sendResult(route, output, res, header, url);
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        res.setHeader("connection", "close");
        const message = `The request body is larger than ${maxBodyBytes} bytes`;
        sendError(res, new ConnectError(message, Code.ResourceExhausted), 413);
        return;
      }
      // What is not a ConnectError is a bug of ours: logged with its cause, answered without it.
      const error = asConnectError(err);
      if (error.code === Code.Internal || error.code === Code.Unknown) {
        logger.error({ err, path: url.pathname, method }, "REST call failed");
      }
      sendError(res, error);
    }
  };

  function sendResult(route: Route, output: MessageShape<DescMessage>, res: NodeServerResponse, header: Headers, url: URL): void {
    const status = route.rule.status || 200;
    const nextPage = route.nextPageField ? (output as unknown as Record<string, unknown>)[route.nextPageField.localName] : undefined;
    if (typeof nextPage === "number") {
      const next = new URL(baseUrlOf(header, publicUrl) + url.pathname + url.search);
      next.searchParams.set("page", String(nextPage));
      res.setHeader("x-next", next.toString());
    }
    let schema: DescMessage = route.rpc.output;
    let message = output;
    if (route.responseField?.fieldKind === "message") {
      schema = route.responseField.message;
      message = (output as unknown as Record<string, MessageShape<DescMessage>>)[route.responseField.localName];
    }
    if (schema.fields.length === 0 || message === undefined) {
      respond(res, status, undefined, "");
      return;
    }
    respondJson(res, status, messageToRest(schema, message));
  }
}

async function requestMessage(
  route: Route,
  params: Map<DescField, string>,
  query: URLSearchParams,
  req: NodeServerRequest,
  maxBodyBytes: number,
): Promise<MessageShape<DescMessage>> {
  const schema = route.rpc.input;
  let json: JsonObject = {};
  if (route.rule.body === "*") {
    // As in google.api.http: with the whole body mapped, the query string binds nothing.
    const body = await readJsonBody(req, maxBodyBytes);
    const updateMask = schema.fields.find(isUpdateMask);
    const notInBody = new Set<DescField>(params.keys());
    if (updateMask) notInBody.add(updateMask);
    json = restBodyToProtoJson(schema, body, { rejectUnknownFields: route.rule.rejectUnknownFields, notInBody });
    if (updateMask) {
      // AIP-134: the keys present in the body, null included, are the fields to change.
      const present = schema.fields.filter((f) => (f.jsonName in body || fieldRules(f)?.jsonAliases.some((alias) => alias in body)) && !notInBody.has(f));
      json[updateMask.jsonName] = present.map((f) => f.jsonName).join(",");
    }
  } else {
    // A named body field (google.api.http's `body: "field"`) takes the JSON body; the query binds
    // the other fields, as it does for routes without a body.
    const bodyField = route.bodyField;
    if (bodyField) {
      const body = await readJsonBody(req, maxBodyBytes);
      json[bodyField.jsonName] = restBodyToProtoJson(bodyField.message, body, { rejectUnknownFields: route.rule.rejectUnknownFields });
    } else {
      await readBody(req, maxBodyBytes);
    }
    for (const name of new Set(query.keys())) {
      const field = schema.fields.find((f) => f.jsonName === name || fieldRules(f)?.queryAliases.includes(name));
      if (!field || params.has(field) || field === bodyField) continue;
      json[field.jsonName] = queryValueToProtoJson(field, query.getAll(name).join(","), name);
    }
  }
  for (const [field, value] of params) json[field.jsonName] = value;
  return decodeMessage(schema, json);
}

function isUpdateMask(field: DescField): boolean {
  return field.name === "update_mask" && field.fieldKind === "message" && field.message.typeName === "google.protobuf.FieldMask";
}

async function readJsonBody(req: NodeServerRequest, maxBodyBytes: number): Promise<JsonObject> {
  const text = (await readBody(req, maxBodyBytes)).toString("utf8");
  if (text.trim() === "") return {};
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(text) as JsonValue;
  } catch (err) {
    throw invalidArgument(`Malformed JSON body: ${(err as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw invalidArgument("The request body must be a JSON object");
  }
  return parsed;
}

/** The contract's error body. `status` overrides the code's status where HTTP has a finer one. */
export function sendError(res: NodeServerResponse, error: ConnectError, status = httpStatusOf(error.code)): void {
  if (retryIsFutile(error.code)) res.setHeader("x-should-retry", "false");
  respondJson(res, status, { error: error.rawMessage, message: error.rawMessage, code: codeName(error.code) });
}

