import type { ComponentChildren } from "preact";

/** An error the API answered (or the network's), read out when it appears. */
export function ErrorNotice(props: { error: Error | undefined }) {
  if (!props.error) return null;
  return (
    <p class="notice notice-error" role="alert">
      {props.error.message}
    </p>
  );
}

/** What a list or page shows while it loads, and when it has nothing. */
export function Loading() {
  return (
    <p class="muted" role="status">
      Loading…
    </p>
  );
}

export function Empty(props: { children: ComponentChildren }) {
  return <p class="muted empty">{props.children}</p>;
}
