import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { extract } from 'tar';
import type { AuditEntriesTable } from '../../db/types.js';
import { type ChainEnds, type ChainWalk, walkChain } from '../audit/audit-chain.js';
import type { ManifestFile } from './export-archive.js';

/** What verifying an export's audit log found: the chain's walk, for the workspace the archive is of. */
export type ArchiveCheck = ChainWalk & { workspaceId: string };

/**
 * Verifies the audit log of an export archive offline (`wsvc audit verify --file`): the audit file's SHA-256 against
 * the manifest, each entry's `prev_hash` against the entry before it, and the chain recomputed from its anchor to its
 * head as the audit module does. Throws when the file is not an export archive.
 */
export async function verifyExportArchive(file: string): Promise<ArchiveCheck> {
  const dir = await mkdtemp(join(tmpdir(), 'wsvc-verify-'));
  try {
    await extract({ file, cwd: dir }, ['manifest.json', 'audit_log.ndjson']);
    const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as {
      workspace_id: string;
      files: ManifestFile[];
      audit_chain: ChainEnds | null;
    };
    const path = join(dir, 'audit_log.ndjson');
    const listed = manifest.files.find((f) => f.name === 'audit_log.ndjson');
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
    const workspaceId = manifest.workspace_id;
    if (!listed || hash.digest('hex') !== listed.sha256) {
      return {
        workspaceId,
        ok: false,
        entries: 0,
        id: null,
        seq: 0,
        problem: 'audit_log.ndjson differs from the manifest',
      };
    }
    if (!manifest.audit_chain) return { workspaceId, ok: true, entries: 0 };
    const ends = manifest.audit_chain;
    let prev = ends.anchor.hash;
    let linked: string | null = null;
    async function* rows(): AsyncGenerator<AuditEntriesTable> {
      for await (const line of createInterface({
        input: createReadStream(path),
        crlfDelay: Number.POSITIVE_INFINITY,
      })) {
        if (line === '') continue;
        const { prev_hash, ...row } = JSON.parse(line) as AuditEntriesTable & { prev_hash: string };
        if (prev_hash !== prev) {
          linked = `entry ${row.id} (seq ${row.seq}) names a previous hash that is not the entry before it`;
          return;
        }
        prev = row.hash;
        yield row;
      }
    }
    const walk = await walkChain(ends, rows());
    const broken = linked as string | null;
    if (broken !== null) return { workspaceId, ok: false, entries: walk.entries, id: null, seq: 0, problem: broken };
    return { workspaceId, ...walk };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
