import { startFakeProvider, type FakeProvider } from "./fake-providers.ts";
import { client, type Call } from "./http.ts";
import type { TestApp } from "./app.ts";

export interface GatewayFixture {
  anthropic: FakeProvider;
  openai: FakeProvider;
  azure: FakeProvider;
  /** The management API, as the admin. */
  admin: Call;
  /** A gateway key with no restrictions. */
  key: string;
  close(): Promise<void>;
}

/**
 * Three fake providers, and the configuration that reaches them: Anthropic-style for claude-*,
 * Azure for azure-*, and OpenAI-style for everything else, plus an unrestricted key.
 */
export async function setUpGateway(t: TestApp): Promise<GatewayFixture> {
  const [anthropic, openai, azure] = await Promise.all([
    startFakeProvider("anthropic"),
    startFakeProvider("openai"),
    startFakeProvider("azure"),
  ]);
  const admin = client(t.baseUrl, t.adminKey);
  const post = async (path: string, body: unknown) => {
    const res = await admin("POST", path, { body });
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
    return res.body as Record<string, unknown>;
  };
  await post("/v1/gateway/providers", { name: "anthropic", kind: "anthropic", baseUrl: anthropic.url, apiKey: anthropic.apiKey });
  await post("/v1/gateway/providers", { name: "openai", kind: "openai", baseUrl: openai.url, apiKey: openai.apiKey });
  await post("/v1/gateway/providers", { name: "azure", kind: "azure_openai", baseUrl: azure.url, apiKey: azure.apiKey, apiVersion: "2025-04-01-preview" });
  await post("/v1/gateway/routing-rules", { priority: 10, models: ["claude-*"], providerName: "anthropic" });
  await post("/v1/gateway/routing-rules", { priority: 20, models: ["azure-*"], providerName: "azure" });
  await post("/v1/gateway/routing-rules", { priority: 100, providerName: "openai" });
  const key = (await post("/v1/gateway/keys", { name: "tests" })).secret as string;
  await t.app.gateway!.watcher.reload();
  return {
    anthropic,
    openai,
    azure,
    admin,
    key,
    close: async () => {
      await Promise.all([anthropic.close(), openai.close(), azure.close()]);
    },
  };
}
