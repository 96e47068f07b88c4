import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from './browser.js';

/** The receivers of docs/snippets/ (shown by the console's setup checklist), and what runs each. */
export const SNIPPETS = [
  { name: 'Node', command: process.execPath, file: 'receiver.mjs' },
  { name: 'Python', command: 'python3', file: 'receiver.py' },
] as const;
export type Snippet = (typeof SNIPPETS)[number];

/** The path of a snippet file in the repository. */
export const snippetPath = (file: Snippet['file']) =>
  fileURLToPath(new URL(`../../docs/snippets/${file}`, import.meta.url));

export interface SnippetReceiver {
  url: string;
  /** Every line it printed after "listening on port …". */
  lines: string[];
  close(): Promise<void>;
}

/**
 * Runs a snippet file as a user runs it (`WEBHOOK_SECRET=… PORT=… node receiver.mjs`), in its own
 * process, on `port` (default: a free one), until it prints that it listens.
 */
export async function startSnippetReceiver(snippet: Snippet, secret: string, port?: number): Promise<SnippetReceiver> {
  const listenOn = port ?? (await freePort());
  const child: ChildProcess = spawn(snippet.command, [snippetPath(snippet.file)], {
    env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(listenOn) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
  });
  await new Promise<void>((resolve, reject) => {
    let buf = '';
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${snippet.file} exited (${code}): ${stderr}`)));
    child.stdout?.on('data', (c: Buffer) => {
      buf += c.toString('utf8');
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line === `listening on port ${listenOn}`) resolve();
        else lines.push(line);
      }
    });
  });
  return {
    url: `http://127.0.0.1:${listenOn}/`,
    lines,
    close: () =>
      new Promise<void>((r) => {
        if (child.exitCode !== null || child.signalCode !== null) return r();
        child.once('exit', () => r());
        child.kill();
      }),
  };
}
