import { getOption, hasOption, type DescField, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { http, type HttpRule } from "../../gen/warden/api/v1/annotations_pb.js";
import { fieldRules } from "./codec.ts";

type Segment = { literal: string } | { param: DescField };

export interface Route {
  httpMethod: string;
  template: string;
  rpc: DescMethod & { methodKind: "unary" };
  rule: HttpRule;
  segments: Segment[];
  /** The request field that takes the JSON body when the rule names one (`body: "field"`). */
  bodyField: (DescField & { fieldKind: "message" }) | undefined;
  /** The response field rendered as the body (`response_body`), if any. */
  responseField: DescField | undefined;
  /** The response field rendered as the x-next header, if the route lists. */
  nextPageField: DescField | undefined;
}

export type RouteMatch =
  | { kind: "found"; route: Route; params: Map<DescField, string> }
  | { kind: "wrong-method"; allow: string[] }
  | { kind: "none" };

/** The REST routes, compiled once at boot from the `warden.api.v1.http` options of the services. */
export class RouteTable {
  readonly routes: Route[];

  constructor(services: DescService[]) {
    this.routes = services.flatMap((service) => service.methods.flatMap((rpc) => compile(rpc)));
    // A literal segment beats a parameter at the same place.
    this.routes.sort((a, b) => literalCount(b) - literalCount(a));
  }

  match(httpMethod: string, pathname: string): RouteMatch {
    const parts = pathname.split("/").slice(1);
    const allow = new Set<string>();
    for (const route of this.routes) {
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      if (route.httpMethod === httpMethod) return { kind: "found", route, params };
      allow.add(route.httpMethod);
    }
    return allow.size > 0 ? { kind: "wrong-method", allow: [...allow].sort() } : { kind: "none" };
  }
}

function compile(rpc: DescMethod): Route[] {
  if (rpc.methodKind !== "unary" || !hasOption(rpc, http)) return [];
  const rule = getOption(rpc, http);
  const { case: verb, value: template } = rule.pattern;
  if (!verb || !template) throw new Error(`${rpc.parent.typeName}.${rpc.name}: http rule without a path`);
  const segments = template.split("/").slice(1).map((part): Segment => {
    const param = /^\{(\w+)\}$/.exec(part)?.[1];
    if (!param) return { literal: part };
    const field = rpc.input.fields.find((f) => f.name === param);
    if (!field) throw new Error(`${rpc.name}: path parameter {${param}} is not a field of ${rpc.input.typeName}`);
    return { param: field };
  });
  let bodyField: Route["bodyField"];
  if (rule.body && rule.body !== "*") {
    const field = rpc.input.fields.find((f) => f.name === rule.body);
    if (!field || field.fieldKind !== "message") throw new Error(`${rpc.name}: body "${rule.body}" is not a message field`);
    bodyField = field;
  }
  let responseField: DescField | undefined;
  if (rule.responseBody) {
    responseField = rpc.output.fields.find((f) => f.name === rule.responseBody);
    if (!responseField || responseField.fieldKind !== "message") {
      throw new Error(`${rpc.name}: response_body "${rule.responseBody}" is not a message field`);
    }
  }
  const nextPageField = rpc.output.fields.find((f) => fieldRules(f)?.nextPage);
  return [{ httpMethod: verb.toUpperCase(), template, rpc: rpc as Route["rpc"], rule, segments, bodyField, responseField, nextPageField }];
}

function matchSegments(segments: Segment[], parts: string[]): Map<DescField, string> | undefined {
  if (segments.length !== parts.length) return undefined;
  const params = new Map<DescField, string>();
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    const part = parts[i];
    if ("literal" in segment) {
      if (segment.literal !== part) return undefined;
    } else {
      if (part === "") return undefined;
      let value: string;
      try {
        value = decodeURIComponent(part);
      } catch {
        return undefined;
      }
      params.set(segment.param, value);
    }
  }
  return params;
}

function literalCount(route: Route): number {
  return route.segments.filter((s) => "literal" in s).length;
}
