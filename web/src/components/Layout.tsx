import type { ComponentChildren } from "preact";
import { useCaller } from "../caller.ts";
import { Link } from "./Link.tsx";

const sections: { title: string; links: [string, string][] }[] = [
  { title: "Evaluation", links: [["/projects", "Projects"]] },
  {
    title: "Gateway",
    links: [
      ["/gateway/usage", "Usage"],
      ["/gateway/request-log", "Request log"],
      ["/gateway/keys", "Keys"],
      ["/gateway/providers", "Providers"],
      ["/gateway/routing-rules", "Routing rules"],
      ["/gateway/limits", "Limits"],
      ["/gateway/guardrails", "Guardrails"],
    ],
  },
];

/** The frame of every signed-in page: who is signed in, the sections, and the page itself. */
export function Layout(props: { path: string; onSignOut(): void; children: ComponentChildren }) {
  const caller = useCaller();
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href="/projects" class="brand">
          Warden
        </Link>
        <span class="who">
          <span class="workspace">{caller.workspaceName}</span>
          <span class="role" title="The role of the key you signed in with">
            {caller.role}
          </span>
        </span>
        <button type="button" class="link-button" onClick={props.onSignOut}>
          Sign out
        </button>
      </header>
      <nav class="side" aria-label="Sections">
        {sections.map((section) => (
          <div key={section.title} class="nav-group">
            <h2 class="nav-title">{section.title}</h2>
            <ul>
              {section.links.map(([href, text]) => (
                <li key={href}>
                  <Link href={href} current={props.path === href || props.path.startsWith(`${href}/`)}>
                    {text}
                  </Link>
                </li>
              ))}
            </ul>
          </div>
        ))}
      </nav>
      <main id="main" tabIndex={-1}>
        {props.children}
      </main>
    </div>
  );
}
