import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { create as createTar } from 'tar';
import { ENVIRONMENTS, type Env } from '../../kernel/environments.js';

/** One kind of data an export holds: read in batches through its module's service (keyset walk). */
export interface ExportSource {
  /** Names its file, `<kind>.ndjson`. */
  kind: string;
  /** The rows after `after` (null: from the first) and the cursor after them (null or fewer rows: the end). */
  batch(workspaceId: string, after: string | null, limit: number): Promise<{ rows: object[]; next: string | null }>;
}

type EnvBatch = (
  workspaceId: string,
  env: Env,
  after: string | null,
  limit: number,
) => Promise<{ rows: object[]; next: string | null }>;

/**
 * A source walking each environment in turn (live, then test) with a batch function of one environment, so each
 * batch follows its table's (workspace, environment, id) index; its cursor is `<env>:<id>`.
 */
export function byEnvironment(batch: EnvBatch): ExportSource['batch'] {
  return async (workspaceId, after, limit) => {
    const sep = after === null ? -1 : after.indexOf(':');
    const start = (after === null ? ENVIRONMENTS[0] : after.slice(0, sep)) as Env;
    const startId = after === null ? null : after.slice(sep + 1) || null;
    const rows: object[] = [];
    let next: string | null = null;
    for (const env of ENVIRONMENTS.slice(ENVIRONMENTS.indexOf(start))) {
      const b = await batch(workspaceId, env, env === start ? startId : null, limit - rows.length);
      rows.push(...b.rows);
      next = `${env}:${b.next ?? (env === start ? (startId ?? '') : '')}`;
      if (rows.length >= limit) break;
    }
    return { rows, next: rows.length === 0 ? null : next };
  };
}

/** One file of the archive as the manifest lists it. */
export interface ManifestFile {
  name: string;
  kind: string;
  rows: number;
  bytes: number;
  sha256: string;
}

/** An NDJSON file being written: counts, hashes and respects the stream's back-pressure. */
export class NdjsonFile {
  private readonly out: WriteStream;
  private readonly hash = createHash('sha256');
  rows = 0;
  bytes = 0;

  constructor(
    readonly path: string,
    readonly name: string,
    readonly kind: string,
  ) {
    this.out = createWriteStream(path);
  }

  async write(row: object): Promise<void> {
    const line = `${JSON.stringify(row)}\n`;
    this.hash.update(line);
    this.rows++;
    this.bytes += Buffer.byteLength(line);
    if (!this.out.write(line)) await once(this.out, 'drain');
  }

  async close(): Promise<ManifestFile> {
    this.out.end();
    await once(this.out, 'finish');
    return { name: this.name, kind: this.kind, rows: this.rows, bytes: this.bytes, sha256: this.hash.digest('hex') };
  }
}

/** A temporary folder for an export's files, inside `dir` (so the archive's rename stays on one file system). */
export function workFolder(dir: string, exportId: string): Promise<string> {
  return mkdtemp(join(dir, `${exportId}.work-`));
}

/** Removes what an earlier run of `exportId` left in `dir` (its work folders and `.part` file), never a finished archive. */
export async function clearLeftovers(dir: string, exportId: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (name.startsWith(`${exportId}.work-`) || name === `${exportId}.tar.gz.part`) {
      await rm(join(dir, name), { recursive: true, force: true });
    }
  }
}

/**
 * Packs `names` of `folder` into `<final>.part` (tar + gzip, streamed), then renames it to `final` once complete, so
 * an archive cut short is never at the final name. Returns its size and SHA-256.
 */
export async function packArchive(
  folder: string,
  names: string[],
  final: string,
  manifest: object,
): Promise<{ size: number; sha256: string }> {
  await writeFile(join(folder, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const part = `${final}.part`;
  await createTar({ gzip: true, cwd: folder, file: part, portable: true }, ['manifest.json', ...names]);
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(part)) hash.update(chunk as Buffer);
  const { size } = await stat(part);
  await rename(part, final);
  return { size, sha256: hash.digest('hex') };
}
