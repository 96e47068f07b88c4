import { escapeControl } from '../kernel/text.js';
import type { Services } from '../services.js';
import { UsageError } from './output.js';

/** The help of `--workspace` on commands that only read (docs/api.md#the-wsvc-cli). */
export const WORKSPACE_DEFAULT_HELP = 'workspace id (default: the only workspace, when there is exactly one)';

/**
 * The workspace a read-only command is about: `--workspace`, or else the only workspace there is,
 * named on stderr so that the choice is never silent. With none or several, a usage error (exit
 * code 2) that says what to do.
 */
export async function workspaceOf(s: Services, given: string | undefined): Promise<string> {
  if (given !== undefined) return given;
  const all = await s.workspaces.list();
  const [only] = all;
  if (all.length === 1 && only) {
    process.stderr.write(`no --workspace given: using ${only.id} (${escapeControl(only.name)}), the only workspace\n`);
    return only.id;
  }
  throw new UsageError(
    all.length === 0
      ? '--workspace: there is no workspace yet; create one with: wsvc workspaces create --name <name> --admin-email <email>'
      : `--workspace <ws_id> is required: there are ${all.length} workspaces (wsvc workspaces list shows them)`,
  );
}
