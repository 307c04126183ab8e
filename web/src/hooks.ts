import { useCallback, useEffect, useRef, useState } from "preact/hooks";

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload(): void;
}

/**
 * Runs `load` when `deps` change, and keeps its latest answer. An answer to an older call that
 * arrives late is dropped, so a quick change of filters never shows a stale page.
 */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true });
  const [round, setRound] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    const call = ++latest.current;
    setState((before) => ({ data: before.data, loading: true }));
    load().then(
      (data) => call === latest.current && setState({ data, loading: false }),
      (error: Error) => call === latest.current && setState({ error, loading: false }),
    );
    // `load` is a new closure each render: `deps` are what it reads.
  }, [...deps, round]);
  const reload = useCallback(() => setRound((n) => n + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

export interface Action {
  busy: boolean;
  error: Error | undefined;
  /** Runs `work`; its error is kept for the page to show, and it answers whether it succeeded. */
  run(work: () => Promise<unknown>): Promise<boolean>;
  clear(): void;
}

/** A change the person asked for (create, save, disable): busy while it runs, its error kept. */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const run = useCallback(async (work: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await work();
      return true;
    } catch (err) {
      setError(err as Error);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(undefined) };
}
