// The server's own list of scopes (its module holds only that list and the role table), so a new scope shows here too.
import type { ApiKey, Env } from '../../api/types';
import { SCOPES } from '../../lib/closed-sets';
import { type KeyScope, useV1Mutation } from '../../lib/mutations';
import { MutationDialog, OverlapSelect } from '../../ui/forms';
import { Field, SecretOnce, Time } from '../../ui/primitives';
import { fieldErrorOf } from '../../ui/states';

function TryIt({ apiKey }: { apiKey: string }) {
  return (
    <>
      <p>Try it:</p>
      <pre className="code">{`curl ${location.origin}/v1/resources \\\n  -H "Authorization: Bearer ${apiKey}"`}</pre>
    </>
  );
}

/** The form's expiry day as the API's `expires_at` (that day's start in UTC), or nothing. */
function expiresAt(d: FormData): { expires_at?: string } {
  const day = String(d.get('expires_at') ?? '');
  return day ? { expires_at: new Date(`${day}T00:00:00Z`).toISOString() } : {};
}

function tomorrow(): string {
  return new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
}

export function GenerateKeyDialog({
  open,
  onClose,
  defaultEnv,
}: {
  open: boolean;
  onClose: () => void;
  defaultEnv: Env;
}) {
  const create = useV1Mutation('post', '/v1/keys');
  return (
    <MutationDialog
      title="Generate New Key"
      madeTitle="Your new API key"
      open={open}
      onClose={onClose}
      mutation={create}
      submitLabel="Generate key"
      fields={['expires_at']}
      onSubmit={(d) =>
        create.mutate({
          body: {
            name: String(d.get('name')),
            env: d.get('env') === 'test' ? 'test' : 'live',
            scopes: d.getAll('scopes').map(String) as KeyScope[],
            ...expiresAt(d),
          },
        })
      }
      made={({ data }) =>
        data.key ? (
          <>
            <SecretOnce label="API key" value={data.key} />
            <TryIt apiKey={data.key} />
          </>
        ) : null
      }
    >
      <Field label="Name">{(id) => <input id={id} name="name" required maxLength={100} />}</Field>
      <Field label="Environment">
        {(id) => (
          <select id={id} name="env" defaultValue={defaultEnv}>
            <option value="live">live</option>
            <option value="test">test</option>
          </select>
        )}
      </Field>
      <Field
        label="Expires on (optional)"
        hint="The key stops working at 00:00 UTC on this day. Empty: it never expires."
        error={fieldErrorOf(create.error, 'expires_at')}
      >
        {(id, described) => <input id={id} name="expires_at" type="date" min={tomorrow()} {...described} />}
      </Field>
      <fieldset>
        <legend>Scopes (your role still limits them)</legend>
        {SCOPES.map((s) => (
          <label key={s} className="check">
            <input type="checkbox" name="scopes" value={s} defaultChecked />
            {s}
          </label>
        ))}
      </fieldset>
    </MutationDialog>
  );
}

/** Roll: a successor with the same name, scopes and owner; the old key keeps working for the overlap. */
export function RollKeyDialog({ apiKey, onClose }: { apiKey: ApiKey | null; onClose: () => void }) {
  const roll = useV1Mutation('post', '/v1/keys/{id}/roll');
  return (
    <MutationDialog
      title={`Roll ${apiKey?.name ?? 'key'}`}
      madeTitle="Key rolled"
      open={apiKey !== null}
      onClose={onClose}
      mutation={roll}
      submitLabel="Roll key"
      onSubmit={(d) => {
        if (apiKey)
          roll.mutate({ params: { path: { id: apiKey.id } }, body: { expire_old_in_s: Number(d.get('overlap')) } });
      }}
      made={({ data }) =>
        data.key ? (
          <>
            <SecretOnce label="New API key" value={data.key} />
            <p>
              The old key works until <Time iso={data.previous_key.expires_at} />.
            </p>
            <TryIt apiKey={data.key} />
          </>
        ) : null
      }
    >
      <OverlapSelect label="Keep the old key working for" />
    </MutationDialog>
  );
}
