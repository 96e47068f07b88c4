import { describe, expect, it } from 'vitest';
import { mulDivRoundHalfUp, overage, periodAt, periodByIndex, proration } from './periods.js';
import { DEFAULT_PLANS, PlansFileError, parsePlans } from './plans.js';

// Backends: sqlite — pure rules: billing periods, proration, overage and the plans file
// Tier: quick

const T = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();
const plan = (id: string) => {
  const p = DEFAULT_PLANS.find((x) => x.id === id);
  if (!p) throw new Error(id);
  return p;
};

describe('billing periods (docs/billing.md#periods)', () => {
  it('anchor day 31: shorter months end on their last day, leap February 2028 on the 29th', () => {
    const anchor = T('2028-01-31T15:42:07.123Z');
    const starts = [0, 1, 2, 3, 4, 5, 6, 12, 13].map((i) => iso(periodByIndex(anchor, i).start).slice(0, 10));
    expect(starts).toEqual([
      '2028-01-31',
      '2028-02-29',
      '2028-03-31',
      '2028-04-30',
      '2028-05-31',
      '2028-06-30',
      '2028-07-31',
      '2029-01-31',
      '2029-02-28',
    ]);
    expect(periodByIndex(anchor, 1).end - periodByIndex(anchor, 1).start).toBe(31 * 86_400_000); // Feb 29 → Mar 31
    expect(periodByIndex(anchor, 0).end - periodByIndex(anchor, 0).start).toBe(29 * 86_400_000); // Jan 31 → Feb 29
  });

  it('anchor day 29/30 in a non-leap February, and the periods tile time without gaps', () => {
    const anchor = T('2026-11-30T08:00:00Z');
    expect(iso(periodByIndex(anchor, 3).start)).toBe('2027-02-28T00:00:00.000Z');
    expect(iso(periodByIndex(anchor, 4).start)).toBe('2027-03-30T00:00:00.000Z');
    for (let i = 0; i < 40; i++) expect(periodByIndex(anchor, i).end).toBe(periodByIndex(anchor, i + 1).start);
  });

  it('periodAt: the first and last millisecond of a period, and the next one', () => {
    const anchor = T('2028-01-31T15:42:07Z');
    const feb = periodAt(anchor, T('2028-02-29T00:00:00.000Z'));
    expect(feb.index).toBe(1);
    expect(iso(feb.start)).toBe('2028-02-29T00:00:00.000Z');
    expect(iso(feb.end)).toBe('2028-03-31T00:00:00.000Z');
    expect(periodAt(anchor, T('2028-02-28T23:59:59.999Z')).index).toBe(0);
    expect(periodAt(anchor, T('2028-03-30T23:59:59.999Z')).index).toBe(1);
    expect(periodAt(anchor, T('2028-03-31T00:00:00.000Z')).index).toBe(2);
    // The creation instant itself is in period 0, which began at that day's midnight.
    const first = periodAt(anchor, anchor);
    expect(first.index).toBe(0);
    expect(iso(first.start)).toBe('2028-01-31T00:00:00.000Z');
    // Years later, still on the anchor day.
    expect(iso(periodAt(anchor, T('2031-06-15T12:00:00Z')).start)).toBe('2031-05-31T00:00:00.000Z');
  });
});

describe('amounts in integer cents (docs/billing.md#invoices)', () => {
  it('rounds half up, exactly', () => {
    expect(mulDivRoundHalfUp(1, 1, 2)).toBe(1); // 0.5 → 1
    expect(mulDivRoundHalfUp(1, 1, 3)).toBe(0); // 0.333 → 0
    expect(mulDivRoundHalfUp(2, 1, 3)).toBe(1); // 0.667 → 1
    expect(mulDivRoundHalfUp(-1, 1, 2)).toBe(-1); // a half-cent credit → 1 cent
    expect(mulDivRoundHalfUp(49_900, 2_678_399, 2_678_400)).toBe(49_900); // 49899.98… → 49900
  });

  it('prorates an upgrade by the whole second, to the cent', () => {
    // A 30-day period (2026-04-10 → 2026-05-10): 2,592,000 s.
    const p = periodAt(T('2026-01-10T00:00:00Z'), T('2026-04-20T00:00:00Z'));
    expect(iso(p.start)).toBe('2026-04-10T00:00:00.000Z');
    expect(p.end - p.start).toBe(2_592_000_000);
    // Free → Pro exactly half-way: 4,900 × 1,296,000 / 2,592,000 = 2,450.
    expect(proration(p, T('2026-04-25T00:00:00Z'), 0, 4_900)).toEqual({
      secondsLeft: 1_296_000,
      periodSeconds: 2_592_000,
      amountCents: 2_450,
    });
    // One second later: 4,900 × 1,295,999 / 2,592,000 = 2,449.998… → 2,450.
    expect(proration(p, T('2026-04-25T00:00:01Z'), 0, 4_900).amountCents).toBe(2_450);
    // The part-second is not counted: .999 after 00:00:00 still has 1,295,999 whole seconds left.
    expect(proration(p, T('2026-04-25T00:00:00.999Z'), 0, 4_900).secondsLeft).toBe(1_295_999);
    // Pro → Scale with 1 s left: 45,000 × 1 / 2,592,000 = 0.017 → 0; with 29 s: 0.503 → 1.
    expect(proration(p, p.end - 1_000, 4_900, 49_900).amountCents).toBe(0);
    expect(proration(p, p.end - 29_000, 4_900, 49_900).amountCents).toBe(1);
    expect(proration(p, p.end - 28_000, 4_900, 49_900).amountCents).toBe(0); // 0.486 → 0
    // At the period's first millisecond: the whole difference.
    expect(proration(p, p.start, 4_900, 49_900).amountCents).toBe(45_000);
  });

  it('prices overage per started unit of 10,000 requests', () => {
    const pro = plan('pro');
    expect(overage(1_000_000, pro)).toEqual({ excess: 0, units: 0, amountCents: 0 });
    expect(overage(1_000_001, pro)).toEqual({ excess: 1, units: 1, amountCents: 50 });
    expect(overage(1_010_000, pro)).toEqual({ excess: 10_000, units: 1, amountCents: 50 });
    expect(overage(1_010_001, pro)).toEqual({ excess: 10_001, units: 2, amountCents: 100 });
    expect(overage(20_000_001, plan('scale'))).toEqual({ excess: 1, units: 1, amountCents: 25 });
    expect(overage(50_000, plan('free'))).toEqual({ excess: 0, units: 0, amountCents: 0 });
  });
});

describe('PLANS_FILE (docs/billing.md#plans-file)', () => {
  it('accepts the default plans written out', () => {
    expect(parsePlans(JSON.stringify({ plans: DEFAULT_PLANS }))).toEqual(DEFAULT_PLANS);
  });

  it('names the plan and the field of each problem', () => {
    const bad = {
      plans: [
        { ...plan('free') },
        { ...plan('pro'), base_price_cents: 49.5 },
        { ...plan('scale'), max_webhooks: -1, colour: 'red' },
      ],
    };
    let caught: unknown;
    try {
      parsePlans(JSON.stringify(bad));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(PlansFileError);
    const problems = (caught as PlansFileError).problems;
    expect(problems).toContain(
      'PLANS_FILE: plan "pro" field "base_price_cents" must be a non-negative integer (cents); got 49.5',
    );
    expect(problems).toContain(
      'PLANS_FILE: plan "scale" field "max_webhooks" must be a non-negative integer or null; got -1',
    );
    expect(problems).toContain('PLANS_FILE: plan "scale" has unknown field "colour"');
    expect(problems).toHaveLength(3);
  });

  it('refuses a file without a free plan, with a duplicate id, or not JSON', () => {
    expect(() => parsePlans(JSON.stringify({ plans: [plan('pro')] }))).toThrow(/"free" is required/);
    expect(() => parsePlans(JSON.stringify({ plans: [plan('free'), plan('free')] }))).toThrow(/appears twice/);
    expect(() => parsePlans('{')).toThrow(/not valid JSON/);
    expect(() => parsePlans('{"plans": []}')).toThrow(/at least one plan/);
  });
});
