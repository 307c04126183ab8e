import { useState } from "preact/hooks";
import { call, get, withQuery } from "../api.ts";
import { Link } from "../components/Link.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { Pager } from "../components/Pager.tsx";
import { GoalCounts, Status } from "../components/Status.tsx";
import { formatDate, formatInteger } from "../format.ts";
import { useLoad } from "../hooks.ts";
import { usePageTitle } from "../title.ts";
import type { Commit, List, Pipeline, Project } from "../types.ts";

const PER_PAGE = 25;

/** A project: its inference pipelines and its commits, each with its tests' standing. */
export function ProjectPage(props: { projectId: string }) {
  const project = useLoad(() => projectById(props.projectId), [props.projectId]);
  usePageTitle(project.data?.name);
  const [pipelinePage, setPipelinePage] = useState(1);
  const [commitPage, setCommitPage] = useState(1);
  const pipelines = useLoad(
    () => call<List<Pipeline>>("GET", withQuery(`/v1/projects/${props.projectId}/inference-pipelines`, { page: pipelinePage, perPage: PER_PAGE })),
    [props.projectId, pipelinePage],
  );
  const commits = useLoad(
    () => call<List<Commit>>("GET", withQuery(`/v1/projects/${props.projectId}/versions`, { page: commitPage, perPage: PER_PAGE })),
    [props.projectId, commitPage],
  );
  return (
    <>
      <p class="crumbs">
        <Link href="/projects">Projects</Link>
      </p>
      <h1>{project.data?.name ?? "Project"}</h1>
      <ErrorNotice error={project.error} />
      {project.data ? (
        <p class="lead">
          {project.data.taskType} · {project.data.monitoringGoalCount} monitoring and {project.data.developmentGoalCount} development tests
          {project.data.description ? ` · ${project.data.description}` : ""}
        </p>
      ) : null}

      <section aria-labelledby="pipelines-title">
        <h2 id="pipelines-title">Inference pipelines</h2>
        <ErrorNotice error={pipelines.error} />
        {!pipelines.data ? (
          pipelines.loading ? <Loading /> : null
        ) : pipelines.data.body.items.length === 0 ? (
          <Empty>No inference pipeline.</Empty>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Tests (latest window)</th>
                  <th scope="col" class="num">Rows</th>
                  <th scope="col">Last evaluated</th>
                </tr>
              </thead>
              <tbody>
                {pipelines.data.body.items.map((pipeline) => (
                  <tr key={pipeline.id}>
                    <th scope="row">
                      <Link href={`/projects/${props.projectId}/inference-pipelines/${pipeline.id}`}>{pipeline.name}</Link>
                    </th>
                    <td>
                      <Status value={pipeline.status} />
                    </td>
                    <td>
                      <GoalCounts passing={pipeline.passingGoalCount} failing={pipeline.failingGoalCount} total={pipeline.totalGoalCount} />
                    </td>
                    <td class="num">{formatInteger(pipeline.totalRecordsCount)}</td>
                    <td>{formatDate(pipeline.dateLastEvaluated)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <Pager label="Pipelines" page={pipelinePage} hasNext={pipelines.data?.hasNext ?? false} onPage={setPipelinePage} />
      </section>

      <section aria-labelledby="commits-title">
        <h2 id="commits-title">Commits</h2>
        <ErrorNotice error={commits.error} />
        {!commits.data ? (
          commits.loading ? <Loading /> : null
        ) : commits.data.body.items.length === 0 ? (
          <Empty>No commit.</Empty>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Message</th>
                  <th scope="col">Status</th>
                  <th scope="col">Tests</th>
                  <th scope="col">Pushed</th>
                </tr>
              </thead>
              <tbody>
                {commits.data.body.items.map((commit) => (
                  <tr key={commit.id}>
                    <th scope="row">
                      <Link href={`/projects/${props.projectId}/versions/${commit.id}`}>{commit.commit.message}</Link>
                    </th>
                    <td>
                      <Status value={commit.status} />
                    </td>
                    <td>
                      <GoalCounts passing={commit.passingGoalCount} failing={commit.failingGoalCount} total={commit.totalGoalCount} />
                    </td>
                    <td>{formatDate(commit.dateCreated)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <Pager label="Commits" page={commitPage} hasNext={commits.data?.hasNext ?? false} onPage={setCommitPage} />
      </section>
    </>
  );
}

/**
 * A project by ID. The API has no "get project" route (the spec has none); the list filters by
 * name only, so this walks the list, which is fine for the hundreds of projects a workspace has.
 */
export async function projectById(projectId: string): Promise<Project> {
  for (let page = 1; ; page++) {
    const answer = await call<List<Project>>("GET", withQuery("/v1/projects", { page, perPage: 100 }));
    const found = answer.body.items.find((project) => project.id === projectId);
    if (found) return found;
    if (!answer.hasNext) throw new Error("Project not found");
  }
}

export const pipelineById = (pipelineId: string) => get<Pipeline>(`/v1/inference-pipelines/${pipelineId}`);
