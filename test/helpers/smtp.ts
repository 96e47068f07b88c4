import type { AddressInfo } from 'node:net';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/**
 * A real SMTP server on loopback: every accepted message parsed (`got`, with its arrival time in `at`);
 * `reject` answers the next ones 451; `onAccept` runs as a message is accepted, just before the 250.
 */
export async function startSmtp(opts: { onAccept?: (m: ParsedMail) => void } = {}) {
  const got: ParsedMail[] = [];
  const at: number[] = [];
  const state = { reject: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, done) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (state.reject > 0) {
          state.reject--;
          const err = Object.assign(new Error('Try again later'), { responseCode: 451 });
          done(err);
          return;
        }
        simpleParser(Buffer.concat(chunks)).then((m) => {
          got.push(m);
          at.push(Date.now());
          opts.onAccept?.(m);
          done();
        }, done);
      });
    },
  });
  // A client killed mid-transaction (test/notifications/crash.test.ts) resets its connection: kept, not thrown.
  const errors: Error[] = [];
  server.on('error', (err) => errors.push(err));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.server.address() as AddressInfo).port;
  return { got, at, errors, state, port, close: () => new Promise<void>((r) => server.close(() => r())) };
}
export type Smtp = Awaited<ReturnType<typeof startSmtp>>;

/** The messages that arrived for one address. */
export const mailTo = (smtp: Smtp, email: string) =>
  smtp.got.filter((m) => m.to && !Array.isArray(m.to) && m.to.text === email);
