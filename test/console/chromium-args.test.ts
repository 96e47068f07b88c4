import { describe, expect, it } from 'vitest';
import {
  CHROMIUM_ARGS,
  featuresLeftOn,
  PLAYWRIGHT_DISABLED_FEATURES,
  UNUSED_WINDOW_FEATURES,
} from '../helpers/chromium.js';

// Backends: sqlite — the command line the browser files give Chromium, no browser started
// Tier: quick
// Chromium reads only the last `--disable-features` of its command line: the tests' own (which turns off
// the unused pages of each window, test/helpers/chromium.ts) must name Playwright's too, or they come back
// on. test/chromium-broker.ts checks the command line Playwright ran with featuresLeftOn.
describe("the browser files' Chromium command line", () => {
  it('turns off the unused window pages and every feature Playwright turns off, in one --disable-features', () => {
    const lists = CHROMIUM_ARGS.filter((a) => a.startsWith('--disable-features='));
    expect(lists).toHaveLength(1);
    const named = new Set(lists[0]?.slice('--disable-features='.length).split(','));
    for (const f of [...PLAYWRIGHT_DISABLED_FEATURES, ...UNUSED_WINDOW_FEATURES]) expect(named.has(f), f).toBe(true);
  });

  it("names the features of Playwright's own --disable-features that the last one leaves on", () => {
    const ran = ['chromium', '--disable-features=A,B,C', '--enable-features=X', '--disable-features=B,D'];
    expect(featuresLeftOn(ran)).toEqual(['A', 'C']);
    expect(featuresLeftOn(['chromium', '--disable-features=A,B', '--disable-features=A,B,D'])).toEqual([]);
    expect(featuresLeftOn(['chromium', '--disable-features=A'])).toEqual([]);
    expect(featuresLeftOn(['chromium', ...CHROMIUM_ARGS.slice(0, 2)])).toEqual([]);
  });
});
