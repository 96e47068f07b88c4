import { type Command, InvalidArgumentError } from 'commander';
import { isJson } from './admin.commands.js';
import { cliWrite, withServices } from './context.js';
import { print, table } from './output.js';

function parseLimit(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1 || n > 1000) throw new InvalidArgumentError('a number from 1 to 1000');
  return n;
}

/** `wsvc operator deliveries|retry`: the operator's own events at OPERATOR_WEBHOOK_URL (docs/api.md#operator-events). */
export function registerOperatorCommands(program: Command): void {
  const operator = program
    .command('operator')
    .description('the instance-wide events sent to OPERATOR_WEBHOOK_URL (docs/api.md#operator-events)');
  operator
    .command('deliveries')
    .description('list the operator event deliveries, newest first')
    .option('--limit <n>', 'how many (1..1000)', parseLimit, 50)
    .action(async (opts: { limit: number }, cmd: Command) => {
      const list = await withServices((s) => s.operatorEvents.list(opts.limit));
      print(
        isJson(cmd),
        { deliveries: list },
        table(
          ['ID', 'EVENT', 'STATUS', 'ATTEMPTS', 'LAST STATUS', 'NEXT ATTEMPT'],
          list.map((d) => [
            d.id,
            d.event,
            d.status,
            String(d.attempt_count),
            d.last_response_status === null ? (d.last_error ?? '-') : String(d.last_response_status),
            d.next_attempt_at ?? '-',
          ]),
        ) || '(no operator deliveries)',
      );
    });
  operator
    .command('retry')
    .description('send a delivery that is not pending once more, at once')
    .argument('<delivery_id>', 'odlv_… id')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const d = await cliWrite((s, u) => s.operatorEvents.retry(u, id));
      print(isJson(cmd), { delivery: d }, `${d.id} queued (${d.event}, ${d.attempt_count} attempts so far)`);
    });
}
