import { useState } from "preact/hooks";
import { call, get, withQuery } from "../api.ts";
import { SelectField } from "../components/fields.tsx";
import { Link } from "../components/Link.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { Pager } from "../components/Pager.tsx";
import { GoalCounts, Status } from "../components/Status.tsx";
import { MeasuredText, thresholdText } from "../components/ThresholdText.tsx";
import { formatDate } from "../format.ts";
import { useLoad } from "../hooks.ts";
import { usePageTitle } from "../title.ts";
import type { Commit, List, TestResult } from "../types.ts";

const statuses = [
  ["", "Every status"],
  ["failing", "Failing"],
  ["passing", "Passing"],
  ["skipped", "Skipped"],
  ["error", "Error"],
] as const;

/** A commit: its evaluation's status, and each development test's result on its datasets. */
export function CommitPage(props: { projectId: string; commitId: string }) {
  const commit = useLoad(() => get<Commit>(`/v1/versions/${props.commitId}`), [props.commitId]);
  usePageTitle(commit.data ? `Commit ${commit.data.commit.message}` : "Commit");
  const [status, setStatus] = useState<(typeof statuses)[number][0]>("");
  const [page, setPage] = useState(1);
  const results = useLoad(
    () => call<List<TestResult>>("GET", withQuery(`/v1/versions/${props.commitId}/results`, { status, page, perPage: 50 })),
    [props.commitId, status, page],
  );
  return (
    <>
      <p class="crumbs">
        <Link href="/projects">Projects</Link> / <Link href={`/projects/${props.projectId}`}>Project</Link>
      </p>
      <h1>{commit.data?.commit.message ?? "Commit"}</h1>
      <ErrorNotice error={commit.error} />
      {commit.data ? (
        <dl class="facts">
          <div>
            <dt>Status</dt>
            <dd>
              <Status value={commit.data.status} />
              {commit.data.statusMessage ? ` ${commit.data.statusMessage}` : ""}
            </dd>
          </div>
          <div>
            <dt>Tests</dt>
            <dd>
              <GoalCounts passing={commit.data.passingGoalCount} failing={commit.data.failingGoalCount} total={commit.data.totalGoalCount} />
            </dd>
          </div>
          <div>
            <dt>Pushed</dt>
            <dd>{formatDate(commit.data.dateCreated)}</dd>
          </div>
          {commit.data.commit.gitCommitSha ? (
            <div>
              <dt>Git commit</dt>
              <dd>
                <code>{commit.data.commit.gitCommitSha}</code>
              </dd>
            </div>
          ) : null}
        </dl>
      ) : null}

      <section aria-labelledby="results-title">
        <h2 id="results-title">Test results</h2>
        <div class="filters">
          <SelectField
            label="Status"
            value={status}
            options={statuses}
            onChange={(value) => {
              setStatus(value);
              setPage(1);
            }}
          />
        </div>
        <ErrorNotice error={results.error} />
        {!results.data ? (
          results.loading ? <Loading /> : null
        ) : results.data.body.items.length === 0 ? (
          <Empty>No result{status ? ` with status ${status}` : ""}.</Empty>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Test</th>
                  <th scope="col">Status</th>
                  <th scope="col">Measured</th>
                  <th scope="col">Threshold</th>
                  <th scope="col">Message</th>
                </tr>
              </thead>
              <tbody>
                {results.data.body.items.map((result) => (
                  <tr key={result.id}>
                    <th scope="row">
                      #{result.goal.number} {result.goal.name}
                      <div class="muted small">{result.goal.subtype}</div>
                    </th>
                    <td>
                      <Status value={result.status} />
                    </td>
                    <td>
                      <MeasuredText values={result.expectedValues} />
                    </td>
                    <td>{thresholdText(result.goal)}</td>
                    <td class="message">{result.statusMessage}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <Pager label="Results" page={page} hasNext={results.data?.hasNext ?? false} onPage={setPage} />
      </section>
    </>
  );
}
