import { type Command, InvalidArgumentError } from 'commander';
import { AppError, ConflictError } from '../kernel/errors.js';
import { isJson } from './admin.commands.js';
import { cliWrite, withServices } from './context.js';
import { print, table } from './output.js';
import { WORKSPACE_DEFAULT_HELP, workspaceOf } from './workspace-option.js';

const usd = (cents: number) =>
  `${cents < 0 ? '-' : ''}$${(Math.abs(cents) / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
const count = (n: number | null) => (n === null ? 'unlimited' : n.toLocaleString('en-US'));

function parseLimit(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1 || n > 100) throw new InvalidArgumentError('a number from 1 to 100');
  return n;
}

function parseCents(value: string): number {
  if (!/^[0-9]{1,12}$/.test(value) || Number(value) < 1)
    throw new InvalidArgumentError('a whole number of US cents, at least 1');
  return Number(value);
}

type Lines = { kind: string; description: string; quantity: number; unit_price_cents: number; amount_cents: number }[];
const linesText = (lines: Lines) =>
  table(
    ['KIND', 'QTY', 'UNIT', 'AMOUNT', 'DESCRIPTION'],
    lines.map((l) => [l.kind, String(l.quantity), usd(l.unit_price_cents), usd(l.amount_cents), l.description]),
  );

/** An invoice's charge attempts in one cell: `1 failed (insufficient_funds), 2 succeeded`. */
function attemptsText(attempts: { attempt: number; outcome: string; decline_code: string | null }[]): string {
  if (attempts.length === 0) return '-';
  return attempts.map((a) => `${a.attempt} ${a.outcome}${a.decline_code ? ` (${a.decline_code})` : ''}`).join(', ');
}

/** `wsvc billing plans|show|set-plan|invoices|refund|mark-paid|void` (docs/billing.md#the-cli). */
export function registerBillingCommands(program: Command): void {
  const billing = program.command('billing').description('plans, subscriptions and invoices (docs/billing.md)');

  billing
    .command('plans')
    .description('list the plans (the defaults, or PLANS_FILE)')
    .action(async (_opts: unknown, cmd: Command) => {
      const plans = await withServices(async (s) => s.billing.plans());
      print(
        isJson(cmd),
        { plans },
        table(
          ['ID', 'NAME', 'PRICE', 'INCLUDED', 'OVERAGE', 'RESOURCES', 'WEBHOOKS'],
          plans.map((p) => [
            p.id,
            p.name,
            usd(p.base_price_cents),
            `${count(p.included_requests)}${p.hard_cap ? ' (hard cap)' : ''}`,
            p.overage_unit_requests === null || p.overage_unit_price_cents === null
              ? '-'
              : `${usd(p.overage_unit_price_cents)} per ${count(p.overage_unit_requests)}`,
            count(p.max_resources),
            count(p.max_webhooks),
          ]),
        ),
      );
    });

  billing
    .command('show')
    .description("a workspace's plan, current period, usage and upcoming invoice")
    .option('--workspace <ws_id>', WORKSPACE_DEFAULT_HELP)
    .action(async (opts: { workspace?: string }, cmd: Command) => {
      const sub = await withServices(async (s) => s.billing.subscriptionOf(await workspaceOf(s, opts.workspace)));
      const inv = sub.upcoming_invoice;
      print(
        isJson(cmd),
        { subscription: sub },
        [
          `workspace ${sub.workspace_id}`,
          `plan      ${sub.plan.id} (${sub.plan.name}, ${usd(sub.plan.base_price_cents)} a month)`,
          `period    ${sub.current_period.start} to ${sub.current_period.end} (UTC)`,
          `usage     ${count(sub.usage.billable_requests)} of ${count(sub.usage.included_requests)} included live requests`,
          sub.pending_change ? `pending   ${sub.pending_change.plan} from ${sub.pending_change.effective_at}` : '',
          `upcoming  ${usd(inv.total_cents)}`,
          linesText(inv.lines),
        ]
          .filter(Boolean)
          .join('\n'),
      );
    });

  billing
    .command('set-plan')
    .description('upgrade at once (prorated) or downgrade at the end of the period')
    .requiredOption('--workspace <ws_id>', 'workspace id')
    .requiredOption('--plan <plan>', 'plan id (wsvc billing plans)')
    .option(
      '--without-card',
      'with payments on: move to a paid plan although the workspace has no card (its invoices are then settled with mark-paid)',
    )
    .action(async (opts: { workspace: string; plan: string; withoutCard?: boolean }, cmd: Command) => {
      const out = await cliWrite(async (s, u) => {
        try {
          return await s.billing.setPlan(u, opts.workspace, opts.plan, { withoutCard: opts.withoutCard === true });
        } catch (err) {
          // The console's message names the billing page; an operator also needs its address and the override.
          if (!(err instanceof AppError) || err.code !== 'payment_method_required') throw err;
          const plan = s.billing.plans().find((p) => p.id === opts.plan)?.name ?? opts.plan;
          throw new ConflictError(
            'payment_method_required',
            `Workspace ${opts.workspace} has no card, and ${plan} is charged to its card: an admin adds one on the billing page (${s.billing.billingPage(opts.workspace)}), or pass --without-card to bill this workspace by invoice and settle its invoices with wsvc billing mark-paid.`,
          );
        }
      });
      const text =
        out.change === 'upgraded'
          ? `upgraded ${out.from} → ${out.to} now; proration ${usd(out.proration_cents)} on the next invoice`
          : out.change === 'downgrade_scheduled'
            ? `${out.from} → ${out.to} at the end of the period, ${out.effective_at}`
            : out.change === 'downgrade_cancelled'
              ? `pending downgrade cancelled; stays on ${out.plan}`
              : `already on ${out.plan}; nothing changed`;
      print(isJson(cmd), { result: out }, text);
    });

  billing
    .command('invoices')
    .description("a workspace's finalized invoices, newest first")
    .option('--workspace <ws_id>', WORKSPACE_DEFAULT_HELP)
    .option('--limit <n>', 'how many (1..100)', parseLimit, 20)
    .action(async (opts: { workspace?: string; limit: number }, cmd: Command) => {
      const page = await withServices(async (s) =>
        s.billing.invoicesOf(await workspaceOf(s, opts.workspace), { limit: opts.limit, offset: 0, afterId: null }),
      );
      print(
        isJson(cmd),
        { invoices: page.items, total: page.total },
        table(
          ['ID', 'NUMBER', 'PERIOD', 'PLAN', 'TOTAL', 'STATUS', 'PAYMENT', 'ATTEMPTS', 'PAID', 'REFUNDED'],
          page.items.map((i) => [
            i.id,
            i.number,
            `${i.period_start.slice(0, 10)} to ${i.period_end.slice(0, 10)}`,
            i.plan,
            usd(i.total_cents),
            i.status,
            i.payment_status,
            attemptsText(i.payment_attempts),
            i.paid_at ?? '-',
            usd(i.refunded_cents),
          ]),
        ) || '(no invoices)',
      );
    });

  billing
    .command('refund')
    .description('refund a card payment of an invoice through Stripe, all of what is left or --amount-cents')
    .argument('<invoice_id>', 'invoice id (inv_…)')
    .option('--amount-cents <n>', 'how much, in US cents (default: all that is left)', parseCents)
    .action(async (id: string, opts: { amountCents?: number }, cmd: Command) => {
      const inv = await cliWrite(async (s, u) => {
        await s.billing.refund(u, id, opts.amountCents);
        return s.billing.invoice(id);
      });
      print(
        isJson(cmd),
        { invoice: inv },
        `${inv.number} refunded ${usd(inv.refunded_cents)} of ${usd(inv.total_cents)}`,
      );
    });

  for (const [name, status] of [
    ['mark-paid', 'paid'],
    ['void', 'void'],
  ] as const) {
    billing
      .command(name)
      .description(`mark an open invoice ${status} (payments are outside the service)`)
      .argument('<invoice_id>', 'invoice id (inv_…)')
      .action(async (id: string, _opts: unknown, cmd: Command) => {
        const inv = await cliWrite((s, u) => s.billing.settle(u, id, status));
        print(
          isJson(cmd),
          { invoice: inv },
          `${inv.number} ${inv.status} (${usd(inv.total_cents)})\n${linesText(inv.lines)}`,
        );
      });
  }
}
