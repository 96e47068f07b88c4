import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** Longest a connection is held open, reading and discarding, after an answer sent before its body was read. */
export const LINGER_MAX_MS = 5_000;
/** Longest it waits for the next bytes of that body before closing. */
export const LINGER_IDLE_MS = 1_000;
/** Most bytes it reads and discards after such an answer. */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** Between two looks at a lingering socket while no bytes arrive (see `linger`). */
const CHECK_MS = 100;

type ClosingSocket = Socket & { destroySoon?: () => void };

/**
 * Lingering close (RFC 9112 §9.6, nginx's `lingering_close`, Go's `closeWriteAndWait`) for a
 * connection whose answer goes out before the request's body was read (a 413 by Content-Length,
 * a 401, a 404 with a body). Closing it at once would leave the client's unsent body unread, so the
 * kernel answers it with a reset that can reach the client before the answer does (it then sees
 * EPIPE or ECONNRESET instead of the status). Instead, once the answer is written, the write side is
 * closed (FIN) and the rest of the body is read and thrown away (Node's HTTP parser drains it, one
 * chunk at a time, nothing kept) until the client closes, goes quiet for LINGER_IDLE_MS, has sent
 * LINGER_MAX_BYTES more, or LINGER_MAX_MS have passed; then the socket is closed.
 *
 * Node's HTTP server ends a `Connection: close` response's socket with `destroySoon()` (end, then
 * destroy as soon as the end is flushed); this socket's is replaced by the lingering close.
 */
export function lingerOnClose(request: IncomingMessage): void {
  const socket = request.socket as ClosingSocket | null;
  if (!socket || socket.destroyed) return;
  // Counted from the moment the answer is decided, not from when its bytes are flushed: on a loaded
  // machine the client may send many megabytes in between, and they count against the bound too.
  const answeredBytes = socket.bytesRead;
  socket.destroySoon = () => linger(socket, answeredBytes);
}

function linger(socket: Socket, startBytes: number): void {
  if (socket.destroyed) return;
  if (socket.writable) socket.end();
  const started = Date.now();
  let lastBytes = socket.bytesRead;
  let lastProgress = started;
  // Past the byte bound: read no more, and close once the answer is out (the timers below still
  // close it if the client never reads it).
  let stopped = false;
  const enough = () => {
    if (stopped || socket.bytesRead - startBytes < LINGER_MAX_BYTES) return;
    stopped = true;
    socket.pause();
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  };
  enough();
  // Node's HTTP parser drains the rest of the body without telling anyone (the request has been dumped and
  // detached: no 'data' events), so the bytes are counted between reads: while they arrive, the next look is
  // right after the event loop's next reads (setImmediate: the bound is overshot by one turn's reads at
  // most, about 2 MiB); while none do, every CHECK_MS.
  let lastLook = socket.bytesRead;
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  const check = () => {
    const now = Date.now();
    const read = socket.bytesRead;
    if (read !== lastBytes) {
      lastBytes = read;
      lastProgress = now;
    }
    if (now - started >= LINGER_MAX_MS || now - lastProgress >= LINGER_IDLE_MS) return void socket.destroy();
    enough();
    const arriving = read !== lastLook && !stopped;
    lastLook = read;
    if (arriving) immediate = setImmediate(check).unref();
    else timer = setTimeout(check, CHECK_MS).unref();
  };
  immediate = setImmediate(check).unref();
  socket.once('close', () => {
    clearTimeout(timer);
    clearImmediate(immediate);
  });
  // The client closed its side: nothing more to drain; close once the answer and our FIN are out.
  socket.once('end', () =>
    socket.writableFinished ? socket.destroy() : socket.once('finish', () => socket.destroy()),
  );
}
