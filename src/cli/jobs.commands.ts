import { type Command, InvalidArgumentError } from 'commander';
import type { Clock } from '../kernel/clock.js';
import { isJson } from './admin.commands.js';
import { withServices } from './context.js';
import { print, table, UsageError } from './output.js';

/** `--at`: an ISO 8601 time with its offset (`2027-02-01T01:00:00Z`). */
function parseAt(value: string): number {
  const ms = Date.parse(value);
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/.test(value) || Number.isNaN(ms)) {
    throw new InvalidArgumentError('an ISO 8601 time with its offset, such as 2027-02-01T01:00:00Z');
  }
  return ms;
}

/**
 * `wsvc jobs list|run`: the periodic jobs the worker runs (docs/operations.md#periodic-jobs), and one of them run once
 * now, as the worker would, optionally on a clock set to another time (`--at`: a trial of what the job does then,
 * such as finalizing and charging an invoice whose period has not ended yet).
 */
export function registerJobsCommands(program: Command): void {
  const jobs = program.command('jobs').description('the periodic jobs the worker runs: list them, or run one now');
  jobs
    .command('list')
    .description('every periodic job, with how often the worker runs it')
    .action(async (_opts: unknown, cmd: Command) => {
      const list = await withServices(async (s) =>
        s.jobs.map((j) => ({ id: j.id, every_s: j.everyMs / 1000, what: j.name })),
      );
      print(
        isJson(cmd),
        { jobs: list },
        table(
          ['JOB', 'EVERY', 'WHAT'],
          list.map((j) => [
            j.id,
            `${j.every_s} s`,
            j.what.startsWith(`${j.id}: `) ? j.what.slice(j.id.length + 2) : j.what,
          ]),
        ),
      );
    });
  jobs
    .command('run')
    .description('run one periodic job once, now, as the worker would (its actor is scheduler:<job>)')
    .argument('<job>', 'the job id (`wsvc jobs list`)')
    .option(
      '--at <time>',
      'run it on a clock set to this time, moving on from there (a trial: the rows it writes carry that time)',
      parseAt,
    )
    .action(async (id: string, opts: { at?: number }, cmd: Command) => {
      const offset = opts.at === undefined ? 0 : opts.at - Date.now();
      const clock: Clock | undefined = opts.at === undefined ? undefined : { now: () => Date.now() + offset };
      const out = await withServices(
        async (s) => {
          const job = s.jobs.find((j) => j.id === id);
          if (!job) {
            throw new UsageError(`no job ${id}: one of ${s.jobs.map((j) => j.id).join(', ')} (\`wsvc jobs list\`)`);
          }
          const handled = await job.run();
          return { job: job.id, handled, at: new Date(Date.now() + offset).toISOString() };
        },
        { clock },
      );
      print(isJson(cmd), out, `${out.job}: ${out.handled} handled (clock at ${out.at})`);
    });
}
