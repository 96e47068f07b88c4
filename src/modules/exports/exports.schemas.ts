import { type Static, Type } from '@sinclair/typebox';
import { EXPORT_STATUSES } from '../../kernel/export-statuses.js';
import { PageQueryProps } from '../../kernel/schemas.js';

/** docs/data-lifecycle.md#export: an archive of the workspace, its progress and its download's expiry. */
export const ExportSchema = Type.Object(
  {
    id: Type.String({ examples: ['exp_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
    status: Type.Union(
      EXPORT_STATUSES.map((s) => Type.Literal(s)),
      { description: 'queued → running → ready (downloadable for 24 h) → expired; or failed.' },
    ),
    progress: Type.Object({
      kinds_done: Type.Integer({ description: 'Kinds of data written so far.' }),
      kinds_total: Type.Integer(),
      rows_written: Type.Integer({ description: 'Rows written so far.' }),
    }),
    size_bytes: Type.Union([Type.Integer(), Type.Null()], { description: 'The archive’s size once ready.' }),
    sha256: Type.Union([Type.String(), Type.Null()], { description: 'The archive’s SHA-256 (hex) once ready.' }),
    error: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
    finished_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the download stops: 24 h after the archive is ready.',
    }),
  },
  { $id: 'Export', additionalProperties: false },
);
export type Export = Static<typeof ExportSchema>;

export const ExportParamsSchema = Type.Object({ id: Type.String() }, { additionalProperties: false });

/** GET /v1/exports: newest first, paged like the other lists (docs/api.md#lists-and-paging). */
export const ListExportsQuery = Type.Object({ ...PageQueryProps }, { additionalProperties: false });
