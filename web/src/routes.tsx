import type { VNode } from "preact";
import { match, navigate } from "./router.ts";
import { CommitPage } from "./pages/CommitPage.tsx";
import { GuardrailsPage } from "./pages/GuardrailsPage.tsx";
import { KeysPage } from "./pages/KeysPage.tsx";
import { LimitsPage } from "./pages/LimitsPage.tsx";
import { NotFound } from "./pages/NotFound.tsx";
import { PipelinePage } from "./pages/PipelinePage.tsx";
import { ProjectPage } from "./pages/ProjectPage.tsx";
import { ProjectsPage } from "./pages/ProjectsPage.tsx";
import { ProvidersPage } from "./pages/ProvidersPage.tsx";
import { RequestLogPage } from "./pages/RequestLogPage.tsx";
import { RoutingRulesPage } from "./pages/RoutingRulesPage.tsx";
import { UsagePage } from "./pages/UsagePage.tsx";

type Params = Record<string, string>;

/** Every page, by path. The three project paths are those links.app points at. */
const table: [string, (params: Params) => VNode][] = [
  ["/projects", () => <ProjectsPage />],
  ["/projects/:projectId", (p) => <ProjectPage projectId={p.projectId!} />],
  ["/projects/:projectId/versions/:commitId", (p) => <CommitPage projectId={p.projectId!} commitId={p.commitId!} />],
  ["/projects/:projectId/inference-pipelines/:pipelineId", (p) => <PipelinePage projectId={p.projectId!} pipelineId={p.pipelineId!} />],
  ["/gateway/usage", () => <UsagePage />],
  ["/gateway/request-log", () => <RequestLogPage />],
  ["/gateway/keys", () => <KeysPage />],
  ["/gateway/providers", () => <ProvidersPage />],
  ["/gateway/routing-rules", () => <RoutingRulesPage />],
  ["/gateway/limits", () => <LimitsPage />],
  ["/gateway/guardrails", () => <GuardrailsPage />],
];

export function routeOf(path: string): VNode {
  if (path === "/") {
    navigate("/projects", { replace: true });
    return <ProjectsPage />;
  }
  for (const [pattern, page] of table) {
    const params = match(pattern, path);
    if (params) return page(params);
  }
  return <NotFound />;
}
