import { Type } from '@sinclair/typebox';
import { Timestamp } from '../../kernel/schemas.js';

/** `DELETE /v1/workspace`: the workspace's name, typed again, confirms the deletion. */
export const DeleteWorkspaceBody = Type.Object(
  {
    confirm: Type.String({
      minLength: 1,
      maxLength: 255,
      description: "The workspace's name, exactly as it is spelled: confirms that this workspace is to be deleted.",
    }),
  },
  { additionalProperties: false },
);

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

/** A workspace's deletion: scheduled (with when its rows go) or not (nulls). */
export const WorkspaceDeletionSchema = Type.Object(
  {
    workspace_id: Type.String(),
    scheduled_at: Nullable(Timestamp),
    delete_at: Nullable(
      Type.String({ format: 'date-time', description: 'When the grace period ends and the rows are deleted.' }),
    ),
    scheduled_by: Nullable(Type.String({ description: 'The user who scheduled it (`cli` for an operator).' })),
  },
  { title: 'WorkspaceDeletion' },
);
