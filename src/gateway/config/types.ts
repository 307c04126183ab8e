import type { PriceBook } from "../cost/price-book.ts";
import type { UsageLimit } from "../limits/types.ts";

/**
 * The gateway's configuration as the data plane sees it: an immutable in-memory snapshot,
 * rebuilt from PostgreSQL when the configuration changes (LISTEN/NOTIFY). The request path reads
 * only this; it never queries the database, except for one timed look-up of an unknown key.
 */

/**
 * What a provider speaks. `openai_compatible`: chat completions only (vLLM, Ollama, TGI and most
 * OpenAI-compatible services), plus embeddings.
 */
export type ProviderKind = "anthropic" | "openai" | "azure_openai" | "openai_compatible";

/** The API families of the spec. Anthropic-style is the messages family; OpenAI-style and Azure OpenAI are the responses family. */
export type Family = "messages" | "responses";


export interface ProviderConfig {
  id: string;
  workspaceId: string;
  /** Unique in the workspace; routing rules name their target by it. */
  name: string;
  kind: ProviderKind;
  /** Origin plus optional path prefix, without a trailing slash: https://api.openai.com */
  baseUrl: string;
  /** Decrypted. Never logged, never returned. Null when none is stored. */
  apiKey: string | null;
  connectTimeoutMs: number;
  /** Until the provider's response headers arrive: past it, 504. */
  headersTimeoutMs: number;
  /** Longest silence between two chunks of the body: past it, the call fails. */
  bodyTimeoutMs: number;
  /** Calls in flight to this provider at most; past it, 503 "no upstream capacity for …". */
  maxInFlight: number;
  /** Azure OpenAI only: the api-version query parameter. */
  apiVersion: string | null;
}

export interface RoutingRule {
  id: string;
  workspaceId: string;
  /** Lower runs first. */
  priority: number;
  /** Exact model names or globs (`*`, `?`). Empty: a catch-all rule. */
  models: string[];
  /**
   * 1 to 8, in their order. No weights: fallbacks in this order. Some weights: the first attempt
   * is drawn by weight among those above 0, the others follow in this order (routing/candidates.ts).
   */
  targets: RoutingTarget[];
}

export interface RoutingTarget {
  /** By provider name: it may name a provider that does not exist (then it is left out; 503 if none is left). */
  providerName: string;
  /** The model name sent upstream instead of the caller's, when set. */
  upstreamModel: string | null;
  /** 0 to 1000, or null when none is given (counted as 0 when another target of the rule has one). */
  weight: number | null;
}

export interface GatewayKey {
  id: string;
  workspaceId: string;
  name: string | null;
  /** The owner. */
  userId: string | null;
  groupIds: string[];
  disabled: boolean;
  /** The key's own allow list; null when it has none. */
  allowedModels: string[] | null;
  /**
   * The inference pipeline this key's traffic is written to: the key's own, else its workspace's;
   * null (or absent) when neither names one: the request path then captures nothing.
   */
  inferencePipelineId?: string | null;
  /** Its answers carry Server-Timing, whatever WARDEN_GATEWAY_SERVER_TIMING says. */
  serverTiming?: boolean;
}

export type GuardrailKind = "pii" | "prompt_injection" | "content_safety";

/** Guardrails run in this order, so that the same content always meets the same one first. */
export const guardrailOrder: readonly GuardrailKind[] = ["pii", "prompt_injection", "content_safety"];
export type GuardrailStage = "input" | "output";

export interface GuardrailConfig {
  id: string;
  kind: GuardrailKind;
  stage: GuardrailStage;
  /** PII: the entity types that block; empty means the default high-risk set. */
  piiEntityTypes: string[];
  /** Prompt injection: null means the detector's default. */
  injectionThreshold: number | null;
  /** Content safety: per category; a category left out uses the detector's default. */
  contentThresholds: Record<string, number>;
  /** A detector that errors blocks (true) or lets through (false). */
  failClosed: boolean;
  /** PII only: the entities found are replaced with typed placeholders instead of blocking. */
  redact: boolean;
  /** Plug-ins, instead of the built-in detector. */
  modelPath: string | null;
  tokenizerPath: string | null;
  classifierUrl: string | null;
  classifierTimeoutMs: number | null;
}


export interface WorkspaceConfig {
  workspaceId: string;
  providersByName: Map<string, ProviderConfig>;
  /** Sorted by priority, then creation. */
  routingRules: RoutingRule[];
  /** Block rules: model names or globs refused to every key of the workspace. */
  blockedModels: string[];
  /** Allow lists on users and groups, by ID. */
  userAllowLists: Map<string, string[]>;
  groupAllowLists: Map<string, string[]>;
  /**
   * Enabled guardrails only, by stage, each stage's in `guardrailOrder`: split once here, so that
   * a request neither filters them by stage nor asks twice whether its stage has any.
   */
  guardrails: Record<GuardrailStage, GuardrailConfig[]>;
  usageLimits: UsageLimit[];
  /** The bundled prices, with the workspace's own over them. */
  prices: PriceBook;
}

export interface GatewaySettings {
  /** Requests in flight in one gateway process at most; past it, 503 "gateway at capacity". */
  maxInFlight: number;
}

export interface GatewaySnapshot {
  /** Grows with every reload; for logs and tests. */
  version: number;
  /** By SHA-256 (hex) of the whole key. */
  keysByHash: Map<string, GatewayKey>;
  workspaces: Map<string, WorkspaceConfig>;
  settings: GatewaySettings;
}
