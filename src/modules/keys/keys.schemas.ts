import { type Static, Type } from '@sinclair/typebox';
import { ENVIRONMENTS } from '../../kernel/environments.js';
import { OrderQueryProps, PageQueryProps, SingleLine, Timestamp } from '../../kernel/schemas.js';
import { SCOPES } from '../../kernel/scopes.js';

/** Longest overlap of a rolled key with its successor: 7 days. */
export const MAX_ROLL_OVERLAP_S = 604_800;

const EnvField = Type.Union(
  ENVIRONMENTS.map((e) => Type.Literal(e)),
  {
    description: '`live` keys (`svc_live_…`) act on live data, `test` keys (`svc_test_…`) on the sandbox.',
  },
);
const ScopeField = Type.Union(
  SCOPES.map((s) => Type.Literal(s)),
  { description: 'A permission; the owner’s current role still limits it.' },
);

const keyProps = {
  id: Type.String({ examples: ['key_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
  name: Type.String({ examples: ['CI deploys'] }),
  env: EnvField,
  prefix: Type.String({
    description: 'The first 4 characters after `svc_<env>_`, to recognise the key; never the key.',
    examples: ['AbC1'],
  }),
  scopes: Type.Array(Type.String(), { description: 'What the key may do, within its owner’s role.' }),
  status: Type.Union([Type.Literal('active'), Type.Literal('expired'), Type.Literal('revoked')], {
    description: '`revoked` after DELETE; `expired` once `expires_at` has passed; both answer 401 expired_token.',
  }),
  user_id: Type.String({ description: 'The owner: requests with the key act as this user.' }),
  workspace_id: Type.String(),
  created_by: Type.Union([Type.String(), Type.Null()], {
    description: 'The user who created the key; null for keys made with the `wsvc` command.',
  }),
  rolled_from: Type.Union([Type.String(), Type.Null()], {
    description:
      'The key this one succeeds when it was made by rolling that key (`POST /keys/{id}/roll`, same name); null for keys made any other way.',
  }),
  created_at: Timestamp,
  expires_at: Type.Union([Timestamp, Type.Null()], { description: 'When the key stops working; null: never.' }),
  revoked_at: Type.Union([Timestamp, Type.Null()]),
  last_used_at: Type.Union([Timestamp, Type.Null()], {
    description:
      'The start of the latest minute the key was used in, recorded with the usage counts up to USAGE_FLUSH_MS after the request. Null until the key is first used; always null when the server runs with USAGE_METERING=off.',
  }),
};

export const ApiKeySchema = Type.Object(keyProps, {
  $id: 'ApiKey',
  title: 'API key',
  description: 'An API key record. The key itself is shown once, when it is created, and never again.',
});
export type ApiKey = Static<typeof ApiKeySchema>;

const PlaintextField = Type.Union([Type.String(), Type.Null()], {
  description:
    'The key: send it as `Authorization: Bearer <key>`. Shown only in this response: store it now. ' +
    'null in a replay of the request (same `Idempotency-Key`): the key itself is never stored.',
  examples: ['svc_live_AbC1dEf2GhI3jKl4MnO5pQr6StU7vWx8YzA9bCd0EfG'],
});

export const CreatedApiKeySchema = Type.Object(
  { ...keyProps, key: PlaintextField },
  { title: 'API key with its plaintext' },
);
export type CreatedApiKey = Static<typeof CreatedApiKeySchema>;

export const RolledApiKeySchema = Type.Object(
  {
    ...keyProps,
    key: PlaintextField,
    previous_key: Type.Object(
      { id: Type.String(), expires_at: Timestamp },
      { description: 'The rolled key and when it stops working.' },
    ),
  },
  { title: 'Successor of a rolled API key' },
);
export type RolledApiKey = Static<typeof RolledApiKeySchema>;

export const CreateKeyBody = Type.Object(
  {
    name: SingleLine({
      minLength: 1,
      maxLength: 100,
      description: '1..100 characters on one line (docs/api.md#names), to tell keys apart.',
    }),
    env: EnvField,
    scopes: Type.Optional(
      Type.Array(ScopeField, {
        minItems: 1,
        maxItems: SCOPES.length,
        uniqueItems: true,
        description: 'Left out: the scopes of the key making the request (every scope for an unrestricted key).',
      }),
    ),
    expires_at: Type.Optional({
      ...Timestamp,
      maxLength: 64,
      description: 'When the key stops working; must be in the future.',
    }),
  },
  { additionalProperties: false },
);
export type CreateKeyInput = Static<typeof CreateKeyBody>;

export const RollKeyBody = Type.Object(
  {
    expire_old_in_s: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_ROLL_OVERLAP_S,
        format: 'int32',
        default: 86_400,
        description: 'Seconds the old key keeps working, 0..604800 (default 86400, one day; 0: stops now).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ListKeysQuery = Type.Object(
  {
    ...PageQueryProps,
    ...OrderQueryProps,
    env: Type.Optional(EnvField),
  },
  { additionalProperties: false },
);
