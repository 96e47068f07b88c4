import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { readHeader } from './tiers.js';

/**
 * The order files start in (vitest.config.ts): the projects one after the other (`chromium`, `sqlite`,
 * `postgres`), since a worker keeps its process for the next file only when that file is of the same
 * project; within each, longest expected first, so that a run does not end with one long file on one
 * worker while the others idle. Vitest's own order is alphabetical within each project, and only a
 * local cache knows durations (a fresh clone, as in CI, has none). Expected length here: `Tier: full`
 * files (browsers, processes, soaks) before quick ones, then the larger file first (with the fixtures it
 * imports from its own folder, such as test/console/screens-fixture.ts, which hold most of what a short
 * file runs).
 */
const PROJECTS = ['chromium', 'sqlite', 'postgres'];

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const weights = new Map<string, number>();
    const weight = (spec: TestSpecification): number => {
      let w = weights.get(spec.moduleId);
      if (w === undefined) {
        const path = relative(root, spec.moduleId).split('\\').join('/');
        const text = readFileSync(spec.moduleId, 'utf8');
        const { file } = readHeader(path, text);
        const beside = [...text.matchAll(/from '\.\/([\w.-]+)\.js'/g)]
          .map((m) => join(dirname(spec.moduleId), `${m[1]}.ts`))
          .filter((f) => existsSync(f))
          .reduce((sum, f) => sum + statSync(f).size, 0);
        w = (file?.tier === 'full' ? 1e9 : 0) + statSync(spec.moduleId).size + beside;
        weights.set(spec.moduleId, w);
      }
      return w;
    };
    const rank = (spec: TestSpecification): number => {
      const i = PROJECTS.indexOf(spec.project.name);
      return i === -1 ? PROJECTS.length : i;
    };
    return [...files].sort(
      (a, b) => rank(a) - rank(b) || weight(b) - weight(a) || a.moduleId.localeCompare(b.moduleId),
    );
  }
}
