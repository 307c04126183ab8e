/** A status as a word and a colour: the word carries it, the colour only helps. */
export function Status(props: { value: string }) {
  return <span class={`status status-${props.value}`}>{props.value}</span>;
}

/** Passing, failing and total tests, as commits and pipelines count them. */
export function GoalCounts(props: { passing: number; failing: number; total: number }) {
  return (
    <span class="counts">
      <span class="count-passing">{props.passing} passing</span>
      {" · "}
      <span class="count-failing">{props.failing} failing</span>
      {" · "}
      {props.total} in all
    </span>
  );
}
