import type { ComponentChildren } from "preact";
import { BASE, navigate } from "../router.ts";

/**
 * A link within the console: a real <a href> (so it opens in a new tab, and keyboards and screen
 * readers treat it as a link), followed without a page load when clicked plainly.
 */
export function Link(props: { href: string; children: ComponentChildren; class?: string; current?: boolean }) {
  const onClick = (event: MouseEvent) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(props.href);
  };
  return (
    <a href={BASE + props.href} class={props.class} onClick={onClick} aria-current={props.current ? "page" : undefined}>
      {props.children}
    </a>
  );
}
