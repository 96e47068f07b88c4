import { type Command, InvalidArgumentError } from 'commander';
import { NotFoundError } from '../kernel/errors.js';
import { escapeControl } from '../kernel/text.js';
import { isJson } from './admin.commands.js';
import { withServices } from './context.js';
import { print, table } from './output.js';

function parseLimit(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1 || n > 1000) throw new InvalidArgumentError('a number from 1 to 1000');
  return n;
}

/** `wsvc mail list|show`: the local mailbox, where emails are kept while SMTP_URL is not set (docs/api.md#notifications). */
export function registerMailCommands(program: Command): void {
  const mail = program.command('mail').description('read the emails kept in the local mailbox (no SMTP_URL)');
  mail
    .command('list')
    .description('list the kept emails, newest first')
    .option('--limit <n>', 'how many (1..1000)', parseLimit, 50)
    .action(async (opts: { limit: number }, cmd: Command) => {
      const list = await withServices((s) => s.notifications.listMail(opts.limit));
      print(
        isJson(cmd),
        { mail: list },
        table(
          ['ID', 'TO', 'SUBJECT', 'CREATED'],
          list.map((m) => [m.id, m.to_address, m.subject, m.created_at]),
        ) || '(no mail)',
      );
    });
  mail
    .command('show')
    .description('print one kept email: headers and its text part (--json: both parts)')
    .argument('<id>', 'mail id (mail_…)')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const m = await withServices((s) => s.notifications.findMail(id));
      if (!m) throw new NotFoundError('mail');
      print(
        isJson(cmd),
        { mail: m },
        [
          `Message-ID: ${m.message_id}`,
          `To: ${m.to_address}`,
          `Subject: ${escapeControl(m.subject)}`,
          `Date: ${m.created_at}`,
          '',
          m.text,
        ].join('\n'),
      );
    });
}
