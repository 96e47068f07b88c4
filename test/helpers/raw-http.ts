import net from 'node:net';

/** What came back on a raw connection: the response parsed, whether the server closed it, and when. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  text: string;
  closed: boolean;
  ms: number;
}

/**
 * Writes `chunks` on a fresh TCP connection to 127.0.0.1:`port` (waiting `gapMs` between them,
 * for slow clients), then waits until the server closes the connection or `waitMs` passes.
 */
export async function rawRequest(
  port: number,
  chunks: (string | Buffer)[],
  opts: { gapMs?: number; waitMs?: number } = {},
): Promise<RawResponse> {
  const started = Date.now();
  const socket = net.connect(port, '127.0.0.1');
  const data: Buffer[] = [];
  let closed = false;
  const done = new Promise<void>((resolve) => {
    socket.on('data', (d) => data.push(d));
    socket.on('close', () => {
      closed = true;
      resolve();
    });
    socket.on('error', () => {});
    setTimeout(resolve, opts.waitMs ?? 3000).unref();
  });
  await new Promise<void>((r) => socket.once('connect', () => r()));
  void (async () => {
    for (const c of chunks) {
      if (socket.destroyed) return;
      socket.write(c);
      if (opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
    }
  })();
  await done;
  const ms = Date.now() - started;
  socket.destroy();
  const text = Buffer.concat(data).toString('utf8');
  const [head = '', ...rest] = text.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, body: rest.join('\r\n\r\n'), text, closed, ms };
}
