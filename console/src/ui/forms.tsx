import type { ReactNode } from 'react';
import { Dialog, Field } from './primitives';
import { FormError } from './states';

/** A form's Cancel and submit buttons. */
export function FormActions({
  onCancel,
  submitLabel,
  busy,
}: {
  onCancel: () => void;
  submitLabel: string;
  busy: boolean;
}) {
  return (
    <div className="actions">
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
      <button type="submit" className="primary" disabled={busy}>
        {submitLabel}
      </button>
    </div>
  );
}

/** The one button under something shown once (a key, a secret, a link). */
export function DoneActions({ onDone }: { onDone: () => void }) {
  return (
    <div className="actions">
      <button type="button" className="primary" onClick={onDone}>
        Done
      </button>
    </div>
  );
}

const OVERLAPS = [
  { s: 0, label: 'none: the old one stops now' },
  { s: 3600, label: '1 hour' },
  { s: 86_400, label: '1 day' },
  { s: 604_800, label: '7 days' },
];

/** How long an old key or secret keeps working after a roll or rotation (form field `overlap`, seconds). */
export function OverlapSelect({ label }: { label: string }) {
  return (
    <Field label={label}>
      {(id) => (
        <select id={id} name="overlap" defaultValue="86400">
          {OVERLAPS.map((o) => (
            <option key={o.s} value={o.s}>
              {o.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** What MutationDialog needs of a TanStack mutation. */
interface DialogMutation<TOut> {
  data: TOut | undefined;
  error: unknown;
  isPending: boolean;
  reset: () => void;
}

/**
 * A dialog around one form and its mutation: the fields, the mutation's error, Cancel and submit.
 * With `made`, a success shows what the mutation made (a secret shown once) above a Done button;
 * closing always resets the mutation, so the next opening starts with an empty form.
 */
export function MutationDialog<TOut>({
  title,
  madeTitle,
  open,
  onClose,
  mutation,
  onSubmit,
  submitLabel,
  made,
  fields,
  children,
}: {
  title: string;
  madeTitle?: string;
  open: boolean;
  onClose: () => void;
  mutation: DialogMutation<TOut>;
  onSubmit: (form: FormData) => void;
  submitLabel: string;
  made?: (data: TOut) => ReactNode;
  /** Fields whose errors their Field shows (see fieldErrorOf); the form's error leaves them out. */
  fields?: string[];
  children: ReactNode;
}) {
  const close = () => {
    mutation.reset();
    onClose();
  };
  const result = made && mutation.data !== undefined ? made(mutation.data) : null;
  return (
    <Dialog title={result ? (madeTitle ?? title) : title} open={open} onClose={close}>
      {result ? (
        <>
          {result}
          <DoneActions onDone={close} />
        </>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            onSubmit(new FormData(e.currentTarget));
          }}
        >
          {children}
          <FormError error={mutation.error} attached={fields} />
          <FormActions onCancel={close} submitLabel={submitLabel} busy={mutation.isPending} />
        </form>
      )}
    </Dialog>
  );
}
