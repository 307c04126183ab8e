import { useEffect } from "preact/hooks";

/** The tab's title names the page, as screen readers announce it and history lists it. */
export function usePageTitle(title: string | undefined): void {
  useEffect(() => {
    document.title = title ? `${title} · Warden` : "Warden";
  }, [title]);
}
