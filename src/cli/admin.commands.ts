import { copyFile } from 'node:fs/promises';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { ENVIRONMENTS, type Env } from '../kernel/environments.js';
import { ROLES, type Role } from '../kernel/roles.js';
import { isScope, SCOPES } from '../kernel/scopes.js';
import { cliWrite, withServices } from './context.js';
import { keysTable } from './keys-table.js';
import { print, table } from './output.js';
import { registerWorkspaceDeletionCommands } from './workspace-deletion.commands.js';
import { WORKSPACE_DEFAULT_HELP, workspaceOf } from './workspace-option.js';

export const isJson = (cmd: Command) => Boolean(cmd.optsWithGlobals().json);

function parseScopes(value: string): string[] {
  const scopes = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = scopes.filter((s) => !isScope(s));
  if (scopes.length === 0 || bad.length > 0) {
    throw new InvalidArgumentError(`unknown scope(s) ${bad.join(', ') || '(none given)'}; known: ${SCOPES.join(', ')}`);
  }
  return scopes;
}

function parseOverlap(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n > 604_800) throw new InvalidArgumentError('a number of seconds from 0 to 604800');
  return n;
}

/** `wsvc workspaces|users|keys …`: administration through the same services as the API. */
export function registerAdminCommands(program: Command): void {
  const workspaces = program.command('workspaces').description('manage workspaces');
  workspaces
    .command('create')
    .description('create a workspace with its first admin user and a live and a test key')
    .requiredOption('--name <name>', 'workspace name')
    .requiredOption('--admin-email <email>', "the admin user's email")
    .option('--admin-name <name>', "the admin user's display name")
    .action(async (opts: { name: string; adminEmail: string; adminName?: string }, cmd: Command) => {
      const out = await cliWrite((s, u) =>
        s.workspaces.create(u, { name: opts.name, adminEmail: opts.adminEmail, adminName: opts.adminName }),
      );
      const result = {
        workspace: out.workspace,
        user: out.user,
        keys: {
          live: { id: out.keys.live.id, key: out.keys.live.key },
          test: { id: out.keys.test.id, key: out.keys.test.key },
        },
        set_password_url: out.set_password_url,
      };
      print(
        isJson(cmd),
        result,
        [
          `workspace ${out.workspace.id} (${out.workspace.name})`,
          `admin     ${out.user.id} <${out.user.email}>`,
          `live key  ${out.keys.live.key}`,
          `test key  ${out.keys.test.key}`,
          'Keys are shown once: store them now.',
          `console   ${out.set_password_url}`,
          'Open the console link (valid 7 days, single use) to set the admin password.',
        ].join('\n'),
      );
    });

  workspaces
    .command('list')
    .description('list every workspace with its number of members')
    .action(async (_opts: unknown, cmd: Command) => {
      const list = await withServices((s) => s.workspaces.list());
      print(
        isJson(cmd),
        { workspaces: list },
        table(
          ['ID', 'NAME', 'MEMBERS', 'CREATED'],
          list.map((w) => [w.id, w.name, String(w.members), w.created_at]),
        ) || '(no workspaces)',
      );
    });

  workspaces
    .command('export')
    .description("write an archive of a workspace's data (docs/data-lifecycle.md#export), showing progress")
    .option('--workspace <ws_id>', WORKSPACE_DEFAULT_HELP)
    .option('--out <file>', 'where to write the archive (default: workspace-<ws_id>-<export id>.tar.gz here)')
    .action(async (opts: { workspace?: string; out?: string }, cmd: Command) => {
      const out = await cliWrite(async (s, u) => {
        const workspaceId = await workspaceOf(s, opts.workspace);
        const requested = await s.exports.request(u, workspaceId);
        const line = (text: string) => process.stderr.isTTY && process.stderr.write(`\r\x1b[2K${text}`);
        await s.exports.runDue(u, {
          only: requested.id,
          onProgress: (p) =>
            line(`export ${requested.id}: ${p.kindsDone}/${p.kindsTotal} kinds, ${p.rows} rows (${p.kind})`),
        });
        // A worker process may have taken it first: follow its progress until it ends.
        for (;;) {
          const e = await s.exports.getFor(workspaceId, requested.id);
          if (e.status !== 'queued' && e.status !== 'running') break;
          line(
            `export ${requested.id}: ${e.progress.kinds_done}/${e.progress.kinds_total} kinds, ${e.progress.rows_written} rows (worker)`,
          );
          await new Promise((r) => setTimeout(r, 1000));
        }
        if (process.stderr.isTTY) process.stderr.write('\r\x1b[2K');
        const file = await s.exports.downloadFor(workspaceId, requested.id);
        const target = opts.out ?? file.filename;
        await copyFile(file.path, target);
        return { export: requested.id, file: target, size_bytes: file.size };
      });
      print(isJson(cmd), out, `export ${out.export} written to ${out.file} (${out.size_bytes} bytes)`);
    });
  registerWorkspaceDeletionCommands(workspaces);

  const users = program.command('users').description('manage workspace members');
  users
    .command('list')
    .description('list the current members of a workspace')
    .option('--workspace <ws_id>', WORKSPACE_DEFAULT_HELP)
    .action(async (opts: { workspace?: string }, cmd: Command) => {
      const list = await withServices(async (s) => s.users.listAll(await workspaceOf(s, opts.workspace)));
      print(
        isJson(cmd),
        { users: list },
        table(
          ['ID', 'EMAIL', 'ROLE', 'NAME', 'CREATED'],
          list.map((u) => [u.id, u.email, u.role, u.name ?? '-', u.created_at]),
        ) || '(no members)',
      );
    });

  users
    .command('create')
    .description('add a user to a workspace')
    .requiredOption('--workspace <ws_id>', 'workspace id')
    .requiredOption('--email <email>', 'email')
    .addOption(new Option('--role <role>', 'role').choices(ROLES).makeOptionMandatory())
    .option('--name <name>', 'display name')
    .action(async (opts: { workspace: string; email: string; role: Role; name?: string }, cmd: Command) => {
      const user = await cliWrite((s, u) =>
        s.members.add(u, { workspaceId: opts.workspace, email: opts.email, role: opts.role, name: opts.name }),
      );
      print(isJson(cmd), { user }, `user ${user.id} <${user.email}> ${user.role}`);
    });

  users
    .command('invite')
    .description('add a member, email them a single-use link to set a password (valid 7 days) and print it too')
    .requiredOption('--workspace <ws_id>', 'workspace id')
    .requiredOption('--email <email>', 'email')
    .addOption(new Option('--role <role>', 'role').choices(ROLES).makeOptionMandatory())
    .option('--name <name>', 'display name')
    .action(async (opts: { workspace: string; email: string; role: Role; name?: string }, cmd: Command) => {
      const out = await cliWrite((s, u) =>
        s.members.invite(u, opts.workspace, { email: opts.email, role: opts.role, name: opts.name }),
      );
      print(
        isJson(cmd),
        out,
        `user ${out.user.id} <${out.user.email}> ${out.user.role}\ninvite ${out.invite_url}\nThe invite email is queued: the worker (wsvc serve) sends it, or keeps it for \`wsvc mail list\` without SMTP_URL. The link is shown once.`,
      );
    });

  users
    .command('reset-link')
    .description("print a single-use password reset link (valid 1 hour) for a member's email")
    .requiredOption('--email <email>', 'email')
    .action(async (opts: { email: string }, cmd: Command) => {
      const out = await cliWrite((s, u) => s.consoleAuth.resetLink(u, opts.email));
      if (!out) throw new Error(`no current member has the email ${opts.email}`);
      print(isJson(cmd), out, `reset ${out.url}`);
    });

  users
    .command('set-role')
    .description("change a member's role; their keys narrow or widen at once")
    .argument('<usr_id>', 'usr_… id')
    .addOption(new Option('--role <role>', 'new role').choices(ROLES).makeOptionMandatory())
    .action(async (userId: string, opts: { role: Role }, cmd: Command) => {
      const user = await cliWrite((s, u) => s.members.changeRole(u, userId, opts.role));
      print(isJson(cmd), { user }, `user ${user.id} <${user.email}> ${user.role}`);
    });

  users
    .command('remove')
    .description('remove a member from their workspace; their keys stop working at once')
    .argument('<usr_id>', 'usr_… id')
    .action(async (userId: string, _opts: unknown, cmd: Command) => {
      const out = await cliWrite((s, u) => s.members.removeMember(u, userId));
      print(isJson(cmd), { user: out }, `user ${out.id} removed at ${out.removed_at}`);
    });

  users
    .command('erase')
    .description(
      "erase a person: their email, name, IP addresses and user agents everywhere (every workspace's user row of that email, sessions, notifications, the mailbox, the audit log, whose chain still verifies)",
    )
    .argument('<email>', 'the email of the person to erase')
    .action(async (email: string, _opts: unknown, cmd: Command) => {
      const out = await cliWrite((s, u) => s.erasure.erase(u, email));
      const lines = Object.entries(out.changed).map(([column, n]) => [column, String(n)]);
      if (out.audit_entries > 0) lines.push(['audit_entries (commitments kept)', String(out.audit_entries)]);
      const text =
        out.users.length === 0 && lines.length === 0
          ? 'nothing to erase: no user, session, email or entry names this email'
          : `erased ${out.users.length} user ${out.users.length === 1 ? 'row' : 'rows'} (${out.users.map((u) => `${u.id} in ${u.workspace_id}`).join(', ') || 'none'})\n${table(['WHERE', 'ROWS'], lines)}`;
      // The person was the only admin of these: the operator names another one.
      const orphaned = out.left_without_admin.map(
        (w) =>
          `\nworkspace "${w.name}" (${w.workspace_id}) has no admin left: make a member an admin with \`wsvc users set-role <usr_id> --role admin\` (\`wsvc users list --workspace ${w.workspace_id}\` lists them)`,
      );
      print(isJson(cmd), { ...out }, text + orphaned.join(''));
    });

  const keys = program.command('keys').description('manage API keys');
  keys
    .command('create')
    .description('create an API key for a user (the only place the key is ever shown)')
    .requiredOption('--user <usr_id>', 'owner of the key')
    .addOption(new Option('--env <env>', 'environment').choices(ENVIRONMENTS).makeOptionMandatory())
    .requiredOption('--name <name>', 'descriptive name')
    .option('--scopes <s1,s2>', `comma-separated scopes (default: all of ${SCOPES.join(', ')})`, parseScopes)
    .action(async (opts: { user: string; env: Env; name: string; scopes?: string[] }, cmd: Command) => {
      const key = await cliWrite((s, u) =>
        s.keyRegistry.create(u, { userId: opts.user, env: opts.env, name: opts.name, scopes: opts.scopes ?? null }),
      );
      print(isJson(cmd), { key }, `${key.id} ${key.key}\nThe key is shown once: store it now.`);
    });

  keys
    .command('list')
    .description('list the keys of a workspace (never the secrets)')
    .option('--workspace <ws_id>', WORKSPACE_DEFAULT_HELP)
    .option('--wide', 'every scope of each key (else "all", the list when short, or a count)')
    .action(async (opts: { workspace?: string; wide?: boolean }, cmd: Command) => {
      const list = await withServices(async (s) => s.keyRegistry.list(await workspaceOf(s, opts.workspace)));
      const text = keysTable(list, { now: new Date().toISOString(), wide: Boolean(opts.wide) });
      print(isJson(cmd), { keys: list }, text || '(no keys)');
    });

  keys
    .command('roll')
    .description('roll a key: a successor with the same name, scopes and owner (shown once); the old one expires')
    .argument('<key_id>', 'key_… id')
    .option(
      '--expire-old-in <seconds>',
      'seconds the old key keeps working, 0..604800 (0: stops now)',
      parseOverlap,
      86_400,
    )
    .action(async (keyId: string, opts: { expireOldIn: number }, cmd: Command) => {
      const out = await cliWrite((s, u) => s.keyRegistry.roll(u, keyId, opts.expireOldIn, null));
      const key = { ...out.successor, rolled_from: out.old.id };
      print(
        isJson(cmd),
        { key, previous_key: { id: out.old.id, expires_at: out.expiresAt } },
        `${key.id} ${key.key}\nThe key is shown once: store it now. ${out.old.id} stops working at ${out.expiresAt}.`,
      );
    });

  keys
    .command('revoke')
    .description('revoke a key; it stops working at once')
    .argument('<key_id>', 'key_… id')
    .action(async (keyId: string, _opts: unknown, cmd: Command) => {
      const out = await cliWrite((s, u) => s.keyRegistry.revoke(u, keyId));
      print(isJson(cmd), { key: out }, `${out.id} revoked at ${out.revoked_at}`);
    });
}
