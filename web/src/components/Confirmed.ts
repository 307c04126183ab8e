/** Asks before a change that cannot be undone (a delete): the browser's own dialog, which keyboards and screen readers know. */
export function confirmed(question: string): boolean {
  return window.confirm(question);
}
