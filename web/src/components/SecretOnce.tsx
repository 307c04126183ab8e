import { useEffect, useRef, useState } from "preact/hooks";

/**
 * A secret the API shows once (a new gateway key): shown here until dismissed, then gone from the
 * page's state. Focus moves to it, so a keyboard or screen-reader user finds it at once.
 */
export function SecretOnce(props: { title: string; secret: string; onDone(): void }) {
  const box = useRef<HTMLElement>(null);
  const [copied, setCopied] = useState(false);
  useEffect(() => box.current?.focus(), []);
  const copy = async () => {
    await navigator.clipboard.writeText(props.secret);
    setCopied(true);
  };
  return (
    <section class="secret" ref={box} tabIndex={-1} aria-labelledby="secret-title">
      <h3 id="secret-title">{props.title}</h3>
      <p>Copy it now: Warden keeps only its hash and will not show it again.</p>
      <p>
        <code class="secret-value" data-testid="secret">
          {props.secret}
        </code>
      </p>
      <div class="actions">
        {navigator.clipboard ? (
          <button type="button" onClick={copy}>
            {copied ? "Copied" : "Copy"}
          </button>
        ) : null}
        <button type="button" class="primary" onClick={props.onDone}>
          I have stored it
        </button>
      </div>
    </section>
  );
}
