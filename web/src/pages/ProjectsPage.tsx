import { useState } from "preact/hooks";
import { call, withQuery } from "../api.ts";
import { Link } from "../components/Link.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { Pager } from "../components/Pager.tsx";
import { formatDate } from "../format.ts";
import { useLoad } from "../hooks.ts";
import { usePageTitle } from "../title.ts";
import type { List, Project } from "../types.ts";

const PER_PAGE = 50;

export function ProjectsPage() {
  usePageTitle("Projects");
  const [page, setPage] = useState(1);
  const projects = useLoad(() => call<List<Project>>("GET", withQuery("/v1/projects", { page, perPage: PER_PAGE })), [page]);
  return (
    <>
      <h1>Projects</h1>
      <ErrorNotice error={projects.error} />
      {!projects.data ? (
        projects.loading ? <Loading /> : null
      ) : projects.data.body.items.length === 0 ? (
        <Empty>No project yet. Create one with the API or an Openlayer SDK (POST /v1/projects).</Empty>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Projects, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Task type</th>
                <th scope="col" class="num">Commits</th>
                <th scope="col" class="num">Pipelines</th>
                <th scope="col" class="num">Tests</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {projects.data.body.items.map((project) => (
                <tr key={project.id}>
                  <th scope="row">
                    <Link href={`/projects/${project.id}`}>{project.name}</Link>
                  </th>
                  <td>{project.taskType}</td>
                  <td class="num">{project.versionCount}</td>
                  <td class="num">{project.inferencePipelineCount}</td>
                  <td class="num">{project.goalCount}</td>
                  <td>{formatDate(project.dateCreated)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Projects" page={page} hasNext={projects.data?.hasNext ?? false} onPage={setPage} />
    </>
  );
}
