import { Pool } from "undici";
import { benchModel, holdModel, piiModel, proseModel, variedModel } from "./payloads.ts";

/** The management API's REST door, as the admin. */
export interface Admin {
  call(method: "GET" | "POST" | "PATCH" | "PUT", path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  close(): Promise<void>;
}

export function adminClient(baseUrl: string, adminKey: string): Admin {
  const pool = new Pool(baseUrl, { connections: 2 });
  const authorization = `Bearer ${adminKey}`;
  return {
    async call(method, path, body) {
      const headers: Record<string, string> = { authorization, accept: "application/json" };
      if (body !== undefined) headers["content-type"] = "application/json";
      const res = await pool.request({ method, path, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.body.text();
      return { status: res.statusCode, body: text ? (JSON.parse(text) as unknown) : undefined };
    },
    close: () => pool.close(),
  };
}

export interface GatewayKeyRef {
  id: string;
  secret: string;
}

export interface BenchConfiguration {
  /** The key the load goes through. */
  key: GatewayKeyRef;
  /** A key of its own for the propagation trials, which disable and enable it. */
  propagationKey: GatewayKeyRef;
  /** What was configured, for the report. */
  description: string[];
}

/** Room for 2,000 streams at once, through the gateway's global cap and the provider's. */
export const gatewayCapacity = 4096;
export const providerApiKey = "sk-bench-fake-provider";

/** Calls the management API and fails unless it answers `status`; the answer's body. */
export async function expectStatus(
  admin: Admin,
  method: "POST" | "PUT" | "PATCH",
  path: string,
  status: number,
  body: unknown,
): Promise<Record<string, unknown>> {
  const res = await admin.call(method, path, body);
  if (res.status !== status) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as Record<string, unknown>;
}

/** The models every bench key may use (its allow list). */
export const allowList = ["gpt-4o", "gpt-4o-mini", benchModel, holdModel, proseModel, piiModel, variedModel];

/** A gateway key, allowed the bench's models; `owner` gives it a user and groups. */
export async function addKey(admin: Admin, name: string, owner: { userId?: string; groupIds?: string[] } = {}): Promise<GatewayKeyRef> {
  const created = await expectStatus(admin, "POST", "/v1/gateway/keys", 201, { name, ...owner });
  const ref = { id: String(created.id), secret: String(created.secret) };
  await expectStatus(admin, "POST", "/v1/gateway/access-rules", 201, { effect: "allow", subject: "key", subjectId: ref.id, models: allowList });
  return ref;
}

/**
 * The configuration that puts every check of the gateway on the path: the key is looked up by
 * hash; model access checks a workspace block rule and the key's allow list (which holds the
 * model); routing walks two rules to the one that matches by glob.
 */
export async function configureGateway(admin: Admin, providerUrl: string): Promise<BenchConfiguration> {
  const expect = (method: "POST" | "PUT", path: string, status: number, body: unknown) => expectStatus(admin, method, path, status, body);
  const providerName = "fake-openai";
  const blocked = ["gpt-3*"];
  const rules = [
    { priority: 10, models: ["gpt-4o", "gpt-4o-mini"], providerName },
    { priority: 20, models: ["bench-*"], providerName },
  ];
  await expect("PUT", "/v1/gateway/settings", 200, { maxInFlight: gatewayCapacity });
  await expect("POST", "/v1/gateway/providers", 201, {
    name: providerName,
    kind: "openai",
    baseUrl: providerUrl,
    apiKey: providerApiKey,
    maxInFlight: gatewayCapacity,
  });
  for (const rule of rules) await expect("POST", "/v1/gateway/routing-rules", 201, rule);
  await expect("POST", "/v1/gateway/access-rules", 201, { effect: "block", subject: "workspace", models: blocked });
  const key = (name: string) => addKey(admin, name);
  return {
    key: await key("bench"),
    propagationKey: await key("bench-propagation"),
    description: [
      `provider \`${providerName}\` (openai, maxInFlight ${gatewayCapacity}); gateway settings maxInFlight ${gatewayCapacity}`,
      `routing rules: ${rules.map((r) => `${r.priority} [${r.models.join(", ")}] → ${r.providerName}`).join("; ")} (the bench's model matches the second, by glob)`,
      `model access: a workspace block rule [${blocked.join(", ")}] and an allow list on the key [${allowList.join(", ")}]`,
    ],
  };
}

/** A key with a user and a group of its own, and a daily token limit on each of the three. */
export async function addLimitedKey(admin: Admin, name: string, tokenLimit: number): Promise<GatewayKeyRef> {
  const user = await expectStatus(admin, "POST", "/v1/gateway/users", 201, { name: `${name}-user` });
  const group = await expectStatus(admin, "POST", "/v1/gateway/groups", 201, { name: `${name}-group` });
  const key = await addKey(admin, name, { userId: String(user.id), groupIds: [String(group.id)] });
  for (const [scope, subjectId] of [["key", key.id], ["user", String(user.id)], ["group", String(group.id)]]) {
    await expectStatus(admin, "POST", "/v1/gateway/usage-limits", 201, { scope, subjectId, period: "daily", tokenLimit });
  }
  return key;
}
