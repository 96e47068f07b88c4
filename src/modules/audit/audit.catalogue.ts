/**
 * The audit log's catalogue of actions and the shapes a change records (docs/api.md#audit-log). The
 * one definition is the kernel's (`src/kernel/audit-actions.ts`), where the closed sets live.
 */
export {
  AUDIT_ACTIONS,
  type AuditAction,
  type AuditActor,
  type AuditRecord,
  type AuditTrail,
  type Changes,
  type RequestOrigin,
} from '../../kernel/audit-actions.js';
