import { Command, CommanderError } from 'commander';
import { AppError } from '../kernel/errors.js';
import { registerAdminCommands } from './admin.commands.js';
import { registerAuditCommands } from './audit.commands.js';
import { registerBillingCommands } from './billing.commands.js';
import { registerDbCommands } from './db.commands.js';
import { registerJobsCommands } from './jobs.commands.js';
import { registerMailCommands } from './mail.commands.js';
import { registerOperatorCommands } from './operator.commands.js';
import { UsageError } from './output.js';
import { registerSecretsCommands } from './secrets.commands.js';
import { registerServeCommands } from './serve.commands.js';
import { explainStartupError } from './startup-errors.js';

/**
 * Builds the `wsvc` program (exported for tests). The command files only declare commands; each
 * action imports the settings, storage and services it uses when it runs, so `wsvc --help` and a
 * usage error load commander and these declarations alone.
 */
export function buildProgram(): Command {
  const program = new Command('wsvc')
    .description('Workspace Service: API server, delivery worker and administration')
    .option('--json', 'print exactly one JSON object on stdout')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  registerServeCommands(program);
  registerAdminCommands(program);
  registerDbCommands(program);
  registerMailCommands(program);
  registerBillingCommands(program);
  registerAuditCommands(program);
  registerSecretsCommands(program);
  registerOperatorCommands(program);
  registerJobsCommands(program);
  return program;
}

/** Entry point of bin/wsvc.js: one-line errors on stderr and a non-zero exit for bad input. */
export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    process.exitCode = err instanceof UsageError ? 2 : 1;
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n`);
    } else if (err instanceof AppError) {
      const fields = err.details?.map((d) => d.message).join('; ');
      process.stderr.write(`error: ${err.code}: ${fields || err.message}\n`);
    } else if (err instanceof (await import('../config.js')).ConfigError) {
      // One setting per line, as the server prints them.
      process.stderr.write(`error: ${err.message}\n`);
    } else {
      const explained = explainStartupError(err);
      process.stderr.write(`error: ${explained ?? (err instanceof Error ? err.message : String(err))}\n`);
    }
  }
}
