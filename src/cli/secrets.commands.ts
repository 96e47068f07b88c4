import type { Command } from 'commander';
import { isJson } from './admin.commands.js';
import { cliWrite } from './context.js';
import { print } from './output.js';

/** `wsvc secrets rotate-key` (docs/settings.md#rotating-the-key): stored secrets sealed again under the first key. */
export function registerSecretsCommands(program: Command): void {
  const secrets = program.command('secrets').description('the key that seals stored secrets');
  secrets
    .command('rotate-key')
    .description(
      'seal every stored secret again under the first key of SECRETS_KEY (or of the key file), while the service ' +
        'runs; every process must already hold both keys (SECRETS_KEY=<new>,<old>)',
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const json = isJson(cmd);
      const { sealed, kid } = await cliWrite(async (s, u) => {
        const n = await s.secrets.rotate(u, (column, done) => {
          if (!json) process.stderr.write(`${column}: ${done} sealed again\n`);
        });
        return { sealed: n, kid: s.secrets.sealer.primaryKid };
      });
      print(
        json,
        { sealed_again: sealed, key_id: kid },
        `${sealed} stored secrets sealed again under key ${kid}; the other keys can now be removed.`,
      );
    });
}
