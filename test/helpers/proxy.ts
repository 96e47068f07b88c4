import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 that a test can cut (drop every connection, refuse new ones) and
 * restore, or pause: a partition, where connections stay open and new ones are accepted but no
 * byte passes either way until `resume` (then what was sent meanwhile arrives, as after TCP
 * retransmission).
 */
export interface CuttableProxy {
  port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startProxy(target: { host: string; port: number }): Promise<CuttableProxy> {
  const sockets = new Set<net.Socket>();
  let paused = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
    if (paused) {
      client.pause();
      upstream.pause();
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (server.listening) server.close(() => resolve());
      else resolve();
    });
  const port = await listen(0);
  return {
    port,
    cut: stop,
    pause() {
      paused = true;
      for (const s of sockets) s.pause();
    },
    resume() {
      paused = false;
      for (const s of sockets) s.resume();
    },
    restore: async () => {
      await listen(port);
    },
    close: stop,
  };
}

/** host/port of a postgres:// or redis:// URL. */
export function hostPort(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

/** The same URL with its host:port replaced by 127.0.0.1:<port>. */
export function viaPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}
