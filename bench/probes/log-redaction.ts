// Probe `log-redaction` (docs/performance.md#probes): the CPU cost of the log redaction (src/http/logging.ts) per line,
// alone and as a share of writing a request log line with pino. Run: `npm run bench -- --probe log-redaction [--n 200000]`.
import { Command } from 'commander';
import { pino } from 'pino';
import { loggerOptions, redactLine } from '../../src/http/logging.js';

const lines = {
  'incoming request':
    '{"level":30,"time":1795600000000,"pid":1,"hostname":"vm","reqId":"req_m3x0a1b2c3d4e5-000001","req":{"method":"GET","url":"/v1/resources/res_01JABCDEFGHJKMNPQRSTVWXYZ0","host":"127.0.0.1:8080","remoteAddress":"127.0.0.1","remotePort":51234},"msg":"incoming request"}\n',
  'request completed':
    '{"level":30,"time":1795600000001,"pid":1,"hostname":"vm","reqId":"req_m3x0a1b2c3d4e5-000001","res":{"statusCode":200},"responseTime":0.84,"msg":"request completed"}\n',
  'line with a token':
    '{"level":30,"time":1795600000000,"pid":1,"hostname":"vm","reqId":"req_m3x0a1b2c3d4e5-000002","req":{"method":"GET","url":"/console/sign-in?t=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcde","host":"127.0.0.1:8080","remoteAddress":"127.0.0.1","remotePort":51234},"msg":"incoming request"}\n',
};

function cpuMicros(n: number, fn: () => unknown): number {
  for (let i = 0; i < n / 5; i++) fn();
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) fn();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}

/** Runs the probe with its command-line options (`args`, after the probe's name). */
export async function run(args: string[]): Promise<void> {
  const { n: N } = new Command('log-redaction')
    .option('--n <n>', 'lines per measurement', Number, 200_000)
    .parse(args, { from: 'user' })
    .opts<{ n: number }>();
  for (const [name, line] of Object.entries(lines)) {
    console.log(`redactLine, ${name} (${line.length} B): ${cpuMicros(N, () => redactLine(line)).toFixed(2)} µs`);
  }
  const sink = { write() {} };
  const req = {
    method: 'GET',
    url: '/v1/resources/res_01JABCDEFGHJKMNPQRSTVWXYZ0',
    host: '127.0.0.1:8080',
    ip: '127.0.0.1',
  };
  const plain = pino({ ...loggerOptions('info'), hooks: {} }, sink).child({ reqId: 'req_m3x0a1b2c3d4e5-000001' });
  const redacting = pino(loggerOptions('info'), sink).child({ reqId: 'req_m3x0a1b2c3d4e5-000001' });
  for (const [name, log] of [
    ['pino, same serializer, no line redaction', plain],
    ['pino, with redaction', redacting],
  ] as const) {
    console.log(
      `${name}, "incoming request" line: ${cpuMicros(N, () => log.info({ req }, 'incoming request')).toFixed(2)} µs`,
    );
  }
}
