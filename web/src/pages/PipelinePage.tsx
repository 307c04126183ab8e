import { call, get, withQuery } from "../api.ts";
import { WindowChart } from "../charts/WindowChart.tsx";
import { Link } from "../components/Link.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { GoalCounts, Status } from "../components/Status.tsx";
import { MeasuredText, thresholdText } from "../components/ThresholdText.tsx";
import { formatDate, formatInteger, formatWindow } from "../format.ts";
import { useLoad } from "../hooks.ts";
import { setQuery, useLocation } from "../router.ts";
import { usePageTitle } from "../title.ts";
import type { List, Pipeline, Test, TestResult } from "../types.ts";
import { WindowRows } from "./WindowRows.tsx";

/** Windows charted per test: the newest ones, as many as one page of results holds. */
const WINDOWS = 100;

interface TestWindows {
  test: Test;
  results: TestResult[];
}

/**
 * An inference pipeline: for each monitoring test, its measured value per window against its
 * threshold, and the rows of the window picked (?result=<result id>).
 */
export function PipelinePage(props: { projectId: string; pipelineId: string }) {
  const here = useLocation();
  const selectedId = here.query.get("result") ?? undefined;
  const pipeline = useLoad(() => get<Pipeline>(`/v1/inference-pipelines/${props.pipelineId}`), [props.pipelineId]);
  usePageTitle(pipeline.data?.name);
  const tests = useLoad(() => testWindows(props.projectId, props.pipelineId), [props.projectId, props.pipelineId]);
  const select = (result: TestResult) => setQuery({ result: result.id });
  const selected = tests.data?.flatMap((t) => t.results).find((r) => r.id === selectedId);

  return (
    <>
      <p class="crumbs">
        <Link href="/projects">Projects</Link> / <Link href={`/projects/${props.projectId}`}>Project</Link>
      </p>
      <h1>{pipeline.data?.name ?? "Inference pipeline"}</h1>
      <ErrorNotice error={pipeline.error} />
      {pipeline.data ? (
        <dl class="facts">
          <div>
            <dt>Status</dt>
            <dd>
              <Status value={pipeline.data.status} />
            </dd>
          </div>
          <div>
            <dt>Tests, latest window</dt>
            <dd>
              <GoalCounts passing={pipeline.data.passingGoalCount} failing={pipeline.data.failingGoalCount} total={pipeline.data.totalGoalCount} />
            </dd>
          </div>
          <div>
            <dt>Rows</dt>
            <dd>{formatInteger(pipeline.data.totalRecordsCount)}</dd>
          </div>
          <div>
            <dt>Last evaluated</dt>
            <dd>{formatDate(pipeline.data.dateLastEvaluated)}</dd>
          </div>
        </dl>
      ) : null}

      <h2>Monitoring tests</h2>
      <ErrorNotice error={tests.error} />
      {!tests.data ? (
        tests.loading ? <Loading /> : null
      ) : tests.data.length === 0 ? (
        <Empty>This project has no monitoring test (a test with usesProductionData).</Empty>
      ) : (
        tests.data.map(({ test, results }) => (
          <section key={test.id} class="card test-card" aria-labelledby={`test-${test.id}`} data-testid="test-card">
            <h3 id={`test-${test.id}`}>
              #{test.number} {test.name}
            </h3>
            <p class="muted">
              {test.subtype} · threshold {thresholdText(test)}
              {test.evaluationWindow ? ` · windows of ${windowLength(test.evaluationWindow)}` : ""}
            </p>
            {results.length === 0 ? (
              <Empty>Not evaluated on this pipeline yet.</Empty>
            ) : (
              <>
                {measurementsOf(results).map((measurement) => (
                  <WindowChart key={measurement} results={results} measurement={measurement} selectedId={selectedId} onSelect={select} />
                ))}
                <WindowTable test={test} results={results} selectedId={selectedId} onSelect={select} />
              </>
            )}
            {selected && selected.goalId === test.id ? (
              <WindowRows key={selected.id} pipelineId={props.pipelineId} result={selected} onClose={() => setQuery({ result: undefined })} />
            ) : null}
          </section>
        ))
      )}
    </>
  );
}

/** The windows as a table: what the chart shows, in words, and the way to a window's rows by keyboard. */
function WindowTable(props: { test: Test; results: TestResult[]; selectedId: string | undefined; onSelect(result: TestResult): void }) {
  const failing = props.results.filter((r) => r.status === "failing").length;
  return (
    <details class="windows" open={failing > 0 && props.results.length <= 12}>
      <summary>
        Windows ({props.results.length}, {failing} failing)
      </summary>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Window</th>
              <th scope="col">Status</th>
              <th scope="col">Measured</th>
              <th scope="col">
                <span class="visually-hidden">Rows</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {props.results.map((result) => (
              <tr key={result.id} class={result.id === props.selectedId ? "selected" : undefined}>
                <th scope="row">{formatWindow(result.dateDataStarts, result.dateDataEnds)}</th>
                <td>
                  <Status value={result.status} />
                  {result.status === "skipped" || result.status === "error" ? <div class="muted small">{result.statusMessage}</div> : null}
                </td>
                <td>
                  <MeasuredText values={result.expectedValues} />
                </td>
                <td>
                  <button type="button" class="small-button" onClick={() => props.onSelect(result)} aria-pressed={result.id === props.selectedId}>
                    Rows<span class="visually-hidden"> of {formatWindow(result.dateDataStarts, result.dateDataEnds)}</span>
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
}

/** The project's monitoring tests, each with its results on this pipeline, newest window first. */
async function testWindows(projectId: string, pipelineId: string): Promise<TestWindows[]> {
  const tests = await get<List<Test>>(withQuery(`/v1/projects/${projectId}/tests`, { usesProductionData: true, perPage: 100 }));
  return Promise.all(
    tests.items.map(async (test) => {
      const answer = await call<List<TestResult>>("GET", withQuery(`/v1/tests/${test.id}/results`, { inferencePipelineId: pipelineId, perPage: WINDOWS }));
      return { test, results: answer.body.items };
    }),
  );
}

function measurementsOf(results: TestResult[]): string[] {
  const names = new Set(results.flatMap((r) => r.expectedValues.map((v) => v.measurement)));
  return names.size > 0 ? [...names] : [results[0]?.goal.thresholds[0]?.measurement ?? "value"];
}

function windowLength(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} day${seconds === 86_400 ? "" : "s"}`;
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? "" : "s"}`;
  return `${seconds} s`;
}
