import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import type { Reporter, TestCase, TestModule } from 'vitest/node';
import { readHeader } from './tiers.js';

// Used by .ci/run (with VITEST_JSON_REPORT): writes one line per failed test, and one per test that
// passed only on a retry (WSVC_TEST_RETRY), to `<report>.tests.txt`, so the run's last lines name
// them. A retried test is never hidden: it is listed as "flaky" with the error of its failed try.
// And one line per test file and project, `<seconds>\t<project>\t<file>\t<browser|->`, to
// `<report>.files.tsv` (`browser` for a file that drives Chromium, test/tiers.ts), from which .ci/run
// prints the slowest files of the whole run and the Chromium files' time together.
export default class CiReporter implements Reporter {
  private readonly file: string;
  private readonly times: string;

  constructor() {
    const report = (process.env.VITEST_JSON_REPORT ?? '.tmp/vitest.json').replace(/\.json$/, '');
    this.file = `${report}.tests.txt`;
    this.times = `${report}.files.tsv`;
    writeFileSync(this.file, '');
    writeFileSync(this.times, '');
  }

  onTestCaseResult(testCase: TestCase): void {
    const result = testCase.result();
    const diagnostic = testCase.diagnostic();
    const flaky = result.state === 'passed' && (diagnostic?.retryCount ?? 0) > 0;
    if (result.state !== 'failed' && !flaky) return;
    const where = `[${testCase.project.name}] ${testCase.module.relativeModuleId}`;
    const error = result.errors?.[0]?.message?.split('\n')[0] ?? '';
    const label = flaky ? `flaky (passed on retry ${diagnostic?.retryCount})` : 'FAILED';
    appendFileSync(this.file, `${label}: ${where} > ${testCase.fullName}${error ? ` — ${error.slice(0, 300)}` : ''}\n`);
  }

  // A file that fails outside its tests (an import, a beforeAll) has no failed test case to name.
  onTestModuleEnd(testModule: TestModule): void {
    const d = testModule.diagnostic();
    const seconds = (d.collectDuration + d.duration) / 1000;
    const file = testModule.relativeModuleId;
    let browser = false;
    try {
      browser = readHeader(file, readFileSync(testModule.moduleId, 'utf8')).file?.browser ?? false;
    } catch {
      // A file that cannot be read again is counted as not a browser file.
    }
    appendFileSync(
      this.times,
      `${seconds.toFixed(1)}\t${testModule.project.name}\t${file}\t${browser ? 'browser' : '-'}\n`,
    );
    for (const error of testModule.errors()) {
      const message = error.message?.split('\n')[0] ?? '';
      appendFileSync(
        this.file,
        `FAILED: [${testModule.project.name}] ${testModule.relativeModuleId} — ${message.slice(0, 300)}\n`,
      );
    }
  }
}
