import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

// Start-up failures said as a newcomer can act on them (docs/operations.md#start-up-errors): each
// names the setting involved and a fix. The database is the only connection a command or a server
// needs before it listens (Redis is optional and fails open), so a connection error at start-up is
// about DATABASE_URL. No message repeats a password.

type SystemError = Error & {
  code?: string;
  errno?: number;
  syscall?: string;
  port?: number;
  address?: string;
  path?: string;
  errors?: SystemError[];
};

const DEFAULT_DATABASE_URL = 'sqlite:./data/workspace.db';
const EXAMPLE_URL = 'postgres://user@host:5432/database';

/** The parts of a PostgreSQL DATABASE_URL a message can show (never the password). */
function postgresTarget(url: string): { where: string; host: string; port: string; user: string; database: string } {
  try {
    const u = new URL(url);
    const host = u.hostname || 'localhost';
    const port = u.port || '5432';
    const user = decodeURIComponent(u.username) || process.env.USER || 'postgres';
    const database = decodeURIComponent(u.pathname.replace(/^\//, '')) || user;
    return { where: `${host}:${port}`, host, port, user, database };
  } catch {
    return { where: 'the server it names', host: 'host', port: '5432', user: 'user', database: 'database' };
  }
}

const CONNECT_PROBLEMS: Record<string, string> = {
  ECONNREFUSED: 'nothing accepts connections there (connection refused)',
  ENOTFOUND: 'that host name does not resolve',
  EAI_AGAIN: 'that host name could not be resolved right now',
  ETIMEDOUT: 'no answer within DATABASE_CONNECT_TIMEOUT_MS',
  EHOSTUNREACH: 'that host cannot be reached',
  ENETUNREACH: 'that network cannot be reached',
  ECONNRESET: 'the server closed the connection',
};

function explainPostgres(err: SystemError, url: string): string | undefined {
  const t = postgresTarget(url);
  const code = err.code ?? err.errors?.[0]?.code;
  const client = `-h ${t.host} -p ${t.port} -U postgres`;
  if (code === '3D000') {
    return (
      `DATABASE_URL names the database "${t.database}", which does not exist on ${t.where}. ` +
      `Create it (createdb ${client} ${t.database}) or name an existing database in DATABASE_URL (${EXAMPLE_URL}).`
    );
  }
  if (code === '28000' && /role/.test(err.message)) {
    return (
      `DATABASE_URL connects as "${t.user}", a role that does not exist on ${t.where}. ` +
      `Create it (createuser ${client} ${t.user}) or put an existing user in DATABASE_URL (${EXAMPLE_URL}).`
    );
  }
  if (code === '28P01' || code === '28000') {
    return (
      `DATABASE_URL: the server at ${t.where} refused the user "${t.user}" (${err.message}). ` +
      'Check the user and password in DATABASE_URL (postgres://user:password@host:5432/database) and the server’s pg_hba.conf.'
    );
  }
  if (code === '57P03') {
    return `DATABASE_URL: the PostgreSQL server at ${t.where} is starting up or shutting down; try again in a moment.`;
  }
  const problem = code ? CONNECT_PROBLEMS[code] : undefined;
  if (problem) {
    return (
      `DATABASE_URL: cannot connect to PostgreSQL at ${t.where}: ${problem}. ` +
      `Start PostgreSQL there, or set DATABASE_URL to where it runs (${EXAMPLE_URL}).`
    );
  }
  return undefined;
}

function explainSqlite(err: SystemError, url: string): string | undefined {
  const path = url.slice('sqlite:'.length);
  const full = resolve(path);
  const isDir = (p: string) => {
    try {
      return statSync(p).isDirectory();
    } catch {
      return false;
    }
  };
  const example = `DATABASE_URL=sqlite:${isDir(full) ? `${path.replace(/\/+$/, '')}/workspace.db` : './data/workspace.db'}`;
  // A file-system error is about the database only when it names the database's file or folder.
  const onDatabase = err.path !== undefined && (full === err.path || full.startsWith(`${err.path}/`));
  if (err.code === 'SQLITE_CANTOPEN' || ((err.code === 'EACCES' || err.code === 'ENOTDIR') && onDatabase)) {
    const why = isDir(full)
      ? `${full} is a directory`
      : err.code === 'ENOTDIR'
        ? `a part of ${dirname(full)} is a file, not a folder`
        : `the folder ${dirname(full)} cannot be created or written`;
    return `DATABASE_URL=${url}: cannot open ${full} as a SQLite database file: ${why}. Name a file in a folder you can write, such as ${example}.`;
  }
  if (err.code === 'SQLITE_NOTADB') {
    return `DATABASE_URL=${url}: ${full} is not a SQLite database. Name another file, such as ${example}.`;
  }
  if (err.code === 'SQLITE_READONLY' || err.code === 'SQLITE_PERM') {
    return `DATABASE_URL=${url}: ${full} cannot be written (permission denied). Give this user write access to it and its folder, or name another file, such as ${example}.`;
  }
  return undefined;
}

function explainListen(err: SystemError, env: NodeJS.ProcessEnv): string | undefined {
  const port = err.port ?? env.PORT ?? 8080;
  const host = err.address ?? env.HOST ?? '127.0.0.1';
  const next = Number(port) > 0 && Number(port) < 65535 ? Number(port) + 1 : 8081;
  if (err.code === 'EADDRINUSE') {
    return (
      `PORT ${port} is already in use on ${host} (another wsvc serve, or another program). ` +
      `Stop that process, or choose another port: PORT=${next} wsvc serve (PORT=0 picks a free one).`
    );
  }
  if (err.code === 'EACCES') {
    return `PORT ${port} needs privileges this user does not have (ports below 1024). Choose a port above 1023, such as PORT=8080, and put a proxy in front for port 80 or 443.`;
  }
  if (err.code === 'EADDRNOTAVAIL') {
    return `HOST=${host} is not an address of this machine. Use HOST=127.0.0.1 (this machine only) or HOST=0.0.0.0 (every interface).`;
  }
  return undefined;
}

/**
 * The message for a failure to start (a `wsvc` command or `wsvc serve` before it listens): names the
 * setting and a fix; undefined for any other error, which is shown as it is.
 */
export function explainStartupError(err: unknown, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const e = err as SystemError;
  if (e.syscall === 'listen') return explainListen(e, env);
  const url = env.DATABASE_URL || DEFAULT_DATABASE_URL;
  if (url.startsWith('sqlite:')) return explainSqlite(e, url);
  if (/^postgres(ql)?:\/\//.test(url)) return explainPostgres(e, url);
  return undefined;
}
