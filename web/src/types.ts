/** The shapes of REST /v1 answers that the console reads (docs/api.md, docs/gateway.md). */

export interface List<T> {
  items: T[];
}

export type EvaluationStatus = "queued" | "running" | "paused" | "failed" | "completed" | "unknown";
export type ResultStatus = "running" | "passing" | "failing" | "skipped" | "error";

export interface Project {
  id: string;
  name: string;
  description: string | null;
  taskType: string;
  dateCreated: string;
  versionCount: number;
  inferencePipelineCount: number;
  goalCount: number;
  monitoringGoalCount: number;
  developmentGoalCount: number;
}

export interface Commit {
  id: string;
  projectId: string;
  dateCreated: string;
  status: EvaluationStatus;
  statusMessage: string | null;
  passingGoalCount: number;
  failingGoalCount: number;
  totalGoalCount: number;
  commit: { message: string; gitCommitSha?: string | null; gitCommitRef?: string | null };
}

export interface Pipeline {
  id: string;
  projectId: string;
  name: string;
  description: string | null;
  status: EvaluationStatus;
  statusMessage: string | null;
  passingGoalCount: number;
  failingGoalCount: number;
  totalGoalCount: number;
  totalRecordsCount: number | null;
  dateLastEvaluated: string | null;
  dateLastSampleReceived: string | null;
}

export interface Threshold {
  insightName: string;
  measurement: string;
  operator: string;
  value: unknown;
}

export interface Test {
  id: string;
  number: number;
  name: string;
  type: string;
  subtype: string;
  thresholds: Threshold[];
  evaluationWindow: number | null;
  usesProductionData: boolean;
}

export interface ExpectedValue {
  measurement: string;
  lowerThreshold: number | null;
  upperThreshold: number | null;
  measuredValue: number | null;
}

export interface TestResult {
  id: string;
  goalId: string;
  goal: Test;
  status: ResultStatus;
  statusMessage: string | null;
  dateDataStarts: string | null;
  dateDataEnds: string | null;
  dateCreated: string;
  expectedValues: ExpectedValue[];
}

export type Row = Record<string, unknown>;

export interface GatewayKey {
  id: string;
  name: string | null;
  keyPrefix: string;
  secret: string | null;
  userId: string | null;
  groupIds: string[];
  disabled: boolean;
  dateCreated: string;
  inferencePipelineId: string | null;
}

export interface Named {
  id: string;
  name: string;
}

export type ProviderKind = "anthropic" | "openai" | "azure_openai" | "openai_compatible";

export interface Provider {
  id: string;
  name: string;
  kind: ProviderKind;
  baseUrl: string;
  hasApiKey: boolean;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  maxInFlight: number;
  apiVersion: string | null;
}

export interface RoutingTarget {
  providerName: string;
  upstreamModel: string | null;
  weight: number | null;
}

export interface RoutingRule {
  id: string;
  priority: number;
  models: string[];
  targets: RoutingTarget[];
}

export type LimitUnit = "tokens" | "usd" | "requests";

export interface UsageLimit {
  id: string;
  scope: "key" | "user" | "group";
  subjectId: string;
  period: "daily" | "weekly" | "monthly" | "all_time";
  unit: LimitUnit;
  tokenLimit: number;
  costLimitUsd: number | null;
  requestLimit: number | null;
}

export interface LimitConsumption {
  limit: UsageLimit;
  used: number;
  reserved: number;
  periodStart: string;
  resetsAt: string | null;
}

export type GuardrailKind = "pii" | "prompt_injection" | "content_safety";

export interface Guardrail {
  id: string;
  kind: GuardrailKind;
  stage: "input" | "output";
  enabled: boolean;
  piiEntityTypes: string[];
  injectionThreshold: number | null;
  contentThresholds: Record<string, number>;
  onError: "fail_open" | "fail_closed";
  /** PII only: replace the entities with placeholders instead of refusing. */
  action: "block" | "redact";
}

export interface UsageRow {
  subject: string | null;
  name: string | null;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  costUsd: number;
  unpricedRequests: number;
  bucketStart: string | null;
}

export interface RequestLogEntry {
  id: number;
  requestId: string;
  time: string;
  keyId: string | null;
  keyName: string | null;
  endpoint: string;
  model: string | null;
  provider: string | null;
  status: number;
  errorType: string | null;
  latencyMs: number;
  inputTokens: number;
  outputTokens: number;
  guardrailVerdict: string | null;
  superseded: boolean;
  costUsd: number | null;
  /** What redacting PII guardrails replaced: types and counts. */
  redactions: { stage: "input" | "output"; entityType: string; count: number }[];
}
