import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Caller } from "./session.ts";

/** Who is signed in, for every page below the layout. */
export const CallerContext = createContext<Caller | null>(null);

export function useCaller(): Caller {
  const caller = useContext(CallerContext);
  if (!caller) throw new Error("useCaller outside a signed-in page");
  return caller;
}
