import { type Static, Type } from '@sinclair/typebox';
import { OrderQueryProps, PageQueryProps, SingleLine, Timestamp } from '../../kernel/schemas.js';

export const RESOURCE_TYPES = ['standard', 'premium', 'custom'] as const;
export const RESOURCE_STATUSES = ['active', 'archived'] as const;

/** docs/api.md#resources: string→string, ≤ 50 keys, key 1..40 and value 0..500 code points. */
export const MetadataSchema = Type.Record(Type.String(), Type.String({ maxLength: 500 }), {
  maxProperties: 50,
  propertyNames: { minLength: 1, maxLength: 40 },
  description: 'String keys (1..40 chars) to string values (0..500 chars), at most 50 keys.',
  examples: [{ color: 'blue' }],
});

export const ResourceSchema = Type.Object(
  {
    id: Type.String({ examples: ['res_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
    name: Type.String(),
    type: Type.Union(RESOURCE_TYPES.map((t) => Type.Literal(t))),
    status: Type.Union(RESOURCE_STATUSES.map((s) => Type.Literal(s))),
    metadata: Type.Record(Type.String(), Type.String()),
    workspace_id: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Resource', title: 'Resource' },
);
export type Resource = Static<typeof ResourceSchema>;

const Name = SingleLine({
  minLength: 1,
  maxLength: 255,
  description: '1..255 characters on one line (docs/api.md#names).',
});

export const CreateResourceBody = Type.Object(
  {
    name: Name,
    type: Type.Union(
      RESOURCE_TYPES.map((t) => Type.Literal(t)),
      { description: 'Immutable after creation.' },
    ),
    metadata: Type.Optional(MetadataSchema),
  },
  { additionalProperties: false },
);
export type CreateResourceInput = Static<typeof CreateResourceBody>;

export const UpdateResourceBody = Type.Object(
  {
    name: Type.Optional(Name),
    metadata: Type.Optional(MetadataSchema),
  },
  {
    additionalProperties: false,
    description: 'Only name and metadata; metadata replaces the whole object. type and status are refused.',
  },
);
export type UpdateResourceInput = Static<typeof UpdateResourceBody>;

export const ListResourcesQuery = Type.Object(
  {
    ...PageQueryProps,
    ...OrderQueryProps,
    status: Type.Optional(Type.Union(RESOURCE_STATUSES.map((s) => Type.Literal(s)))),
    type: Type.Optional(Type.Union(RESOURCE_TYPES.map((t) => Type.Literal(t)))),
    name_prefix: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description:
          'Only resources whose name starts with this text, compared exactly (case-sensitive, code point by code point; `%` and `_` are plain characters).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListResourcesFilter = { status?: Resource['status']; type?: Resource['type']; name_prefix?: string };
