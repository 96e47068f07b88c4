import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, errorResponses, RetainedListOf } from '../../kernel/schemas.js';
import { pageMeta } from '../../lib/paging.js';
import { AuditEntrySchema, AuditListQuerySchema } from './audit.schemas.js';
import type { AuditService } from './audit.service.js';

const tags = ['Audit log'];

/** HTTP for /v1/audit-log (docs/api.md#audit-log): admins only (scope audit:read). */
export const auditRoutes: FastifyPluginAsyncTypebox<{
  audit: AuditService;
  /** AUDIT_RETENTION_DAYS, told in `meta.retention_days`. */
  retentionDays: number;
}> = async (app, { audit, retentionDays }) => {
  app.get(
    '/audit-log',
    {
      config: { scope: 'audit:read' },
      schema: {
        tags,
        summary: 'List audit log entries',
        operationId: 'listAuditLog',
        description:
          'Every change made in the workspace, newest first, with its actor, target and changed fields (secrets as "[redacted]"). A key sees its environment\'s entries and the workspace-level ones (env null). Filter by `actor_id`, `action` (exact, or a family by its prefix ending in `.`), `target_id`, `env`, `from`, `to`; page with `cursor`.',
        querystring: AuditListQuerySchema,
        response: { 200: RetainedListOf(Type.Ref(AuditEntrySchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => {
      const page = await audit.list(req.principal, req.query);
      return { data: page.items, meta: { ...pageMeta(page), retention_days: retentionDays } };
    },
  );
};
