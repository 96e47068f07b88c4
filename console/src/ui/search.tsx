import { type FormEvent, useEffect, useId, useState } from 'react';

/**
 * A search box for a list (a `<search>` landmark): the text is applied on Enter or "Search" (one request
 * per search, not one per key), and "Clear" removes it. `value` is the applied search (from the URL).
 */
export function SearchBox({
  label,
  hint,
  value,
  onSearch,
}: {
  label: string;
  hint?: string;
  value: string;
  onSearch: (text: string) => void;
}) {
  const id = useId();
  const [text, setText] = useState(value);
  useEffect(() => setText(value), [value]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSearch(text.trim());
  };
  return (
    <search aria-label={label}>
      <form className="search" onSubmit={submit}>
        <div className="filter">
          <label htmlFor={id}>{label}</label>
          <input
            id={id}
            type="search"
            value={text}
            maxLength={255}
            onChange={(e) => setText(e.target.value)}
            aria-describedby={hint ? `${id}-hint` : undefined}
          />
          {hint ? (
            <small id={`${id}-hint`} className="muted">
              {hint}
            </small>
          ) : null}
        </div>
        <button type="submit">Search</button>
        {value ? (
          <button type="button" onClick={() => onSearch('')}>
            Clear
          </button>
        ) : null}
      </form>
    </search>
  );
}
