import { useLayoutEffect, useRef, useState } from "preact/hooks";

/**
 * The width of the element `ref` is put on, followed as it changes, so that charts draw in real
 * pixels: text stays readable and axis labels are spaced for the room there is, on a phone as at 1280 px.
 */
export function useWidth<T extends HTMLElement>(fallback: number) {
  const ref = useRef<T>(null);
  const [width, setWidth] = useState(fallback);
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    const measure = () => setWidth(Math.max(240, Math.floor(element.clientWidth)));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return { ref, width };
}
