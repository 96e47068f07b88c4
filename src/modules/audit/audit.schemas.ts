import { type Static, Type } from '@sinclair/typebox';
import { AUDIT_ACTIONS } from '../../kernel/audit-actions.js';
import { PageQueryProps, Timestamp } from '../../kernel/schemas.js';

/** Each family of actions as a filter (`resource.`): the part before the dot, and the dot. */
export const AUDIT_ACTION_PREFIXES = [...new Set(AUDIT_ACTIONS.map((a) => `${a.slice(0, a.indexOf('.'))}.`))];

const ActionSchema = Type.Union(
  AUDIT_ACTIONS.map((a) => Type.Literal(a)),
  { description: 'What was done (the closed catalogue).' },
);

const QueryTime = Type.String({ format: 'date-time', maxLength: 64, examples: ['2026-11-22T00:00:00.000Z'] });
const Text = (description: string) => Type.String({ minLength: 1, maxLength: 255, description });

export const AuditQuerySchema = Type.Object(
  {
    actor_id: Type.Optional(
      Text('Entries of this actor: a user id, a key id, or a system actor (`cli`, `worker`, `scheduler:…`).'),
    ),
    action: Type.Optional(
      Type.Union(
        [...AUDIT_ACTIONS, ...AUDIT_ACTION_PREFIXES].map((a) => Type.Literal(a)),
        {
          description: 'One action, or a family of them by its prefix ending in `.` (`resource.`).',
        },
      ),
    ),
    target_id: Type.Optional(Text('Entries about this target (a resource, webhook, key, user… id).')),
    env: Type.Optional(
      Type.Union([Type.Literal('live'), Type.Literal('test')], {
        description: 'Entries of this environment (workspace-level entries have none).',
      }),
    ),
    from: Type.Optional({ ...QueryTime, description: 'From this time, inclusive.' }),
    to: Type.Optional({ ...QueryTime, description: 'Up to this time, inclusive.' }),
  },
  { additionalProperties: false },
);
export type AuditQuery = Static<typeof AuditQuerySchema>;

export const AuditListQuerySchema = Type.Object(
  { ...AuditQuerySchema.properties, limit: PageQueryProps.limit, cursor: PageQueryProps.cursor },
  { additionalProperties: false },
);

const Nullable = <T extends ReturnType<typeof Type.String>>(s: T) => Type.Union([s, Type.Null()]);

export const AuditEntrySchema = Type.Object(
  {
    id: Type.String({ pattern: '^aud_[0-9A-HJKMNP-TV-Z]{26}$', examples: ['aud_01JD4Q3Z8X9V7T6S5R4P3N2M1K'] }),
    seq: Type.Integer({ minimum: 1, description: "Position in the workspace's log: 1, 2, 3… without gaps." }),
    time: Timestamp,
    actor: Type.Object(
      {
        type: Type.Union([Type.Literal('user'), Type.Literal('key'), Type.Literal('system')]),
        id: Type.String({ description: 'A user id, a key id, or the system actor (`cli`, `worker`, `scheduler:…`).' }),
        name: Type.String({
          description: "The key's or user's name (a user without one: their email), or the system actor.",
        }),
        user_id: Type.Optional(Nullable(Type.String({ description: "A key's owner." }))),
      },
      { additionalProperties: false },
    ),
    action: ActionSchema,
    target: Type.Object(
      { type: Type.String(), id: Type.String() },
      { additionalProperties: false, description: 'What the change was about.' },
    ),
    env: Type.Union([Type.Literal('live'), Type.Literal('test'), Type.Null()], {
      description: 'The environment of the change; null for workspace-level changes (members, sign-in, plans).',
    }),
    changes: Type.Record(
      Type.String(),
      Type.Object({ before: Type.Unknown(), after: Type.Unknown() }, { additionalProperties: false }),
      { description: 'Each changed field before and after; secrets appear as "[redacted]".' },
    ),
    request_id: Nullable(Type.String({ description: 'The HTTP request (X-Request-Id); null outside HTTP.' })),
    ip: Nullable(Type.String({ description: "The client's address (behind a trusted proxy, the forwarded one)." })),
    user_agent: Nullable(Type.String()),
  },
  { $id: 'AuditEntry', title: 'AuditEntry', additionalProperties: false },
);
export type AuditEntry = Static<typeof AuditEntrySchema>;
