import { useScopedMutation } from '../../api/hooks';
import type { ApiKey, CreatedApiKey, RolledApiKey } from '../../api/types';
import { Dialog, Field, SecretOnce, Time } from '../../ui/primitives';
import { FormError } from '../../ui/states';

export const SCOPES = [
  'users:read',
  'users:write',
  'resources:read',
  'resources:write',
  'events:read',
  'webhooks:read',
  'webhooks:write',
  'keys:read',
  'keys:write',
];

function TryIt({ apiKey }: { apiKey: string }) {
  return (
    <>
      <p>Try it:</p>
      <pre className="code">{`curl ${location.origin}/v1/resources \\\n  -H "Authorization: Bearer ${apiKey}"`}</pre>
    </>
  );
}

export function GenerateKeyDialog({
  open,
  onClose,
  defaultEnv,
}: {
  open: boolean;
  onClose: () => void;
  defaultEnv: 'live' | 'test';
}) {
  const create = useScopedMutation<{ name: string; env: 'live' | 'test'; scopes: string[] }, { data: CreatedApiKey }>(
    'POST',
    '/v1/keys',
  );
  const close = () => {
    create.reset();
    onClose();
  };
  const made = create.data?.data;
  return (
    <Dialog title={made ? 'Your new API key' : 'Generate New Key'} open={open} onClose={close}>
      {made?.key ? (
        <>
          <SecretOnce label="API key" value={made.key} />
          <TryIt apiKey={made.key} />
          <div className="actions">
            <button type="button" className="primary" onClick={close}>
              Done
            </button>
          </div>
        </>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const d = new FormData(e.currentTarget);
            create.mutate({
              name: String(d.get('name')),
              env: d.get('env') === 'test' ? 'test' : 'live',
              scopes: d.getAll('scopes').map(String),
            });
          }}
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
          <fieldset>
            <legend>Scopes (your role still limits them)</legend>
            {SCOPES.map((s) => (
              <label key={s} className="check">
                <input type="checkbox" name="scopes" value={s} defaultChecked />
                {s}
              </label>
            ))}
          </fieldset>
          <FormError error={create.error} />
          <div className="actions">
            <button type="button" onClick={close}>
              Cancel
            </button>
            <button type="submit" className="primary" disabled={create.isPending}>
              Generate key
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}

const OVERLAPS = [
  { s: 0, label: 'none: the old key stops now' },
  { s: 3600, label: '1 hour' },
  { s: 86_400, label: '1 day' },
  { s: 604_800, label: '7 days' },
];

/** Roll: a successor with the same name, scopes and owner; the old key keeps working for the overlap. */
export function RollKeyDialog({ apiKey, onClose }: { apiKey: ApiKey | null; onClose: () => void }) {
  const roll = useScopedMutation<{ _id: string; expire_old_in_s: number }, { data: RolledApiKey }>(
    'POST',
    (b) => `/v1/keys/${b._id}/roll`,
  );
  const close = () => {
    roll.reset();
    onClose();
  };
  const made = roll.data?.data;
  return (
    <Dialog title={made ? 'Key rolled' : `Roll ${apiKey?.name ?? 'key'}`} open={apiKey !== null} onClose={close}>
      {made?.key ? (
        <>
          <SecretOnce label="New API key" value={made.key} />
          <p>
            The old key works until <Time iso={made.previous_key.expires_at} />.
          </p>
          <TryIt apiKey={made.key} />
          <div className="actions">
            <button type="button" className="primary" onClick={close}>
              Done
            </button>
          </div>
        </>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const s = Number(new FormData(e.currentTarget).get('overlap'));
            if (apiKey) roll.mutate({ _id: apiKey.id, expire_old_in_s: s });
          }}
        >
          <Field label="Keep the old key working for">
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
          <FormError error={roll.error} />
          <div className="actions">
            <button type="button" onClick={close}>
              Cancel
            </button>
            <button type="submit" className="primary" disabled={roll.isPending}>
              Roll key
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}
