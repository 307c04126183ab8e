import type { ComponentChildren } from "preact";
import { useId } from "preact/hooks";

/** Form fields, each with its visible label tied to its control. */

interface Common {
  label: string;
  hint?: string;
  required?: boolean;
}

function Labelled(props: Common & { id: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={props.id}>
        {props.label}
        {props.required ? <span aria-hidden="true"> *</span> : null}
      </label>
      {props.children}
      {props.hint ? (
        <small id={`${props.id}-hint`} class="hint">
          {props.hint}
        </small>
      ) : null}
    </div>
  );
}

export function TextField(props: Common & { value: string; onInput(value: string): void; type?: "text" | "password" | "url" | "search"; placeholder?: string; autoComplete?: string }) {
  const id = useId();
  return (
    <Labelled {...props} id={id}>
      <input
        id={id}
        // Preact types each input type apart; these four take the same attributes.
        type={(props.type ?? "text") as "text"}
        value={props.value}
        required={props.required}
        placeholder={props.placeholder}
        autocomplete={props.autoComplete ?? "off"}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
        onInput={(event) => props.onInput(event.currentTarget.value)}
      />
    </Labelled>
  );
}

export function NumberField(props: Common & { value: string; onInput(value: string): void; min?: number; max?: number; step?: number | "any" }) {
  const id = useId();
  return (
    <Labelled {...props} id={id}>
      <input
        id={id}
        type="number"
        inputMode="decimal"
        value={props.value}
        required={props.required}
        min={props.min}
        max={props.max}
        step={props.step ?? "any"}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
        onInput={(event) => props.onInput(event.currentTarget.value)}
      />
    </Labelled>
  );
}

export function SelectField<T extends string>(props: Common & { value: T; onChange(value: T): void; options: readonly (readonly [T, string])[] }) {
  const id = useId();
  return (
    <Labelled {...props} id={id}>
      <select id={id} value={props.value} required={props.required} onChange={(event) => props.onChange(event.currentTarget.value as T)}>
        {props.options.map(([value, text]) => (
          <option key={value} value={value}>
            {text}
          </option>
        ))}
      </select>
    </Labelled>
  );
}

export function CheckField(props: { label: string; checked: boolean; onChange(checked: boolean): void }) {
  const id = useId();
  return (
    <div class="field field-check">
      <input id={id} type="checkbox" checked={props.checked} onChange={(event) => props.onChange(event.currentTarget.checked)} />
      <label for={id}>{props.label}</label>
    </div>
  );
}
