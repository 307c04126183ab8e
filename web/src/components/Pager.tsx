/** Previous and next page of a list that the API pages (page, and x-next for "there is more"). */
export function Pager(props: { page: number; hasNext: boolean; onPage(page: number): void; label: string }) {
  if (props.page === 1 && !props.hasNext) return null;
  return (
    <nav class="pager" aria-label={`${props.label} pages`}>
      <button type="button" disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>
        Previous
      </button>
      <span aria-live="polite">Page {props.page}</span>
      <button type="button" disabled={!props.hasNext} onClick={() => props.onPage(props.page + 1)}>
        Next
      </button>
    </nav>
  );
}
