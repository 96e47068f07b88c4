import { useState } from 'react';
import type { Resource } from '../../api/types';
import { RESOURCE_TYPES } from '../../lib/mutations';
import { FormActions } from '../../ui/forms';
import { Field } from '../../ui/primitives';
import { FormError } from '../../ui/states';

/** Metadata as `key=value` lines (string values, as the API takes them). */
function parseMetadata(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t) continue;
    const i = t.indexOf('=');
    if (i <= 0) throw new Error(`"${t}" is not key=value`);
    out[t.slice(0, i).trim()] = t.slice(i + 1).trim();
  }
  return out;
}

export function ResourceForm({
  initial,
  submitLabel,
  onSubmit,
  error,
  busy,
  onCancel,
}: {
  initial?: Resource;
  submitLabel: string;
  onSubmit: (v: { name: string; type: Resource['type']; metadata: Record<string, string> }) => void;
  error: unknown;
  busy: boolean;
  onCancel: () => void;
}) {
  const [parseError, setParseError] = useState<string | null>(null);
  const meta = initial
    ? Object.entries(initial.metadata ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join('\n')
    : '';
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        const d = new FormData(e.currentTarget);
        try {
          const metadata = parseMetadata(String(d.get('metadata') ?? ''));
          setParseError(null);
          onSubmit({
            name: String(d.get('name')),
            type: String(d.get('type') ?? initial?.type) as Resource['type'],
            metadata,
          });
        } catch (err) {
          setParseError((err as Error).message);
        }
      }}
    >
      <Field label="Name">
        {(id) => <input id={id} name="name" required maxLength={255} defaultValue={initial?.name} />}
      </Field>
      {initial ? null : (
        <Field label="Type">
          {(id) => (
            <select id={id} name="type" defaultValue="standard">
              {RESOURCE_TYPES.map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          )}
        </Field>
      )}
      <Field label="Metadata" hint="One key=value per line.">
        {(id) => <textarea id={id} name="metadata" rows={4} defaultValue={meta} />}
      </Field>
      {parseError ? (
        <p className="form-error" role="alert">
          {parseError}
        </p>
      ) : null}
      <FormError error={error} />
      <FormActions onCancel={onCancel} submitLabel={submitLabel} busy={busy} />
    </form>
  );
}
