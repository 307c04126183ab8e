import { useEffect, useRef, useState } from "preact/hooks";
import { call, whenUnauthenticated } from "./api.ts";
import { CallerContext } from "./caller.ts";
import { Layout } from "./components/Layout.tsx";
import { Loading } from "./components/Notice.tsx";
import { routeOf } from "./routes.tsx";
import { navigate, useLocation } from "./router.ts";
import { forgetKey, storedKey, storeKey, type Caller } from "./session.ts";
import { SignIn } from "./pages/SignIn.tsx";

type State = { kind: "checking" } | { kind: "signed-out"; reason?: string } | { kind: "signed-in"; caller: Caller };

/** Signs in with a key (checked with GET /v1/whoami), then shows the page the location names. */
export function App() {
  const here = useLocation();
  const [state, setState] = useState<State>(() => (storedKey() ? { kind: "checking" } : { kind: "signed-out" }));

  useEffect(() => {
    whenUnauthenticated(() => {
      forgetKey();
      setState({ kind: "signed-out", reason: "The key was refused (revoked?). Sign in again." });
    });
    if (state.kind !== "checking") return;
    call<Caller>("GET", "/v1/whoami").then(
      (answer) => setState({ kind: "signed-in", caller: answer.body }),
      () => setState({ kind: "signed-out" }),
    );
  }, []);

  // A new page moves focus to its content, as a page load would, for keyboard and screen-reader users.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    document.getElementById("main")?.focus();
  }, [here.path]);

  if (state.kind === "checking") return <Loading />;
  if (state.kind === "signed-out") {
    const onSignedIn = (key: string, caller: Caller) => {
      storeKey(key);
      setState({ kind: "signed-in", caller });
      if (here.path === "/") navigate("/projects", { replace: true });
    };
    return <SignIn reason={state.reason} onSignedIn={onSignedIn} />;
  }
  const signOut = () => {
    forgetKey();
    setState({ kind: "signed-out" });
  };
  const route = routeOf(here.path);
  return (
    <CallerContext.Provider value={state.caller}>
      <Layout path={here.path} onSignOut={signOut}>
        {route}
      </Layout>
    </CallerContext.Provider>
  );
}
