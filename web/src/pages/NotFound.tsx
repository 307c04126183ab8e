import { Link } from "../components/Link.tsx";
import { usePageTitle } from "../title.ts";

export function NotFound() {
  usePageTitle("Not found");
  return (
    <>
      <h1>Not found</h1>
      <p>
        The console has no page here. <Link href="/projects">Go to the projects</Link>.
      </p>
    </>
  );
}
