import { readFileSync } from 'node:fs';

/**
 * A plan (docs/billing.md#plans). Money is integer cents (USD); `null` means unlimited.
 */
export interface Plan {
  id: string;
  name: string;
  base_price_cents: number;
  /** Live requests included each period; with `hard_cap` also the most that are answered. */
  included_requests: number | null;
  hard_cap: boolean;
  /** Overage is priced per this many requests beyond the included ones, rounded up. */
  overage_unit_requests: number | null;
  overage_unit_price_cents: number | null;
  /** Most resources per environment. */
  max_resources: number | null;
  /** Most webhooks per environment. */
  max_webhooks: number | null;
}

/** The plans when PLANS_FILE is not set (docs/billing.md#plans). */
export const DEFAULT_PLANS: readonly Plan[] = Object.freeze([
  {
    id: 'free',
    name: 'Free',
    base_price_cents: 0,
    included_requests: 10_000,
    hard_cap: true,
    overage_unit_requests: null,
    overage_unit_price_cents: null,
    max_resources: 100,
    max_webhooks: 2,
  },
  {
    id: 'pro',
    name: 'Pro',
    base_price_cents: 4_900,
    included_requests: 1_000_000,
    hard_cap: false,
    overage_unit_requests: 10_000,
    overage_unit_price_cents: 50,
    max_resources: 100_000,
    max_webhooks: 16,
  },
  {
    id: 'scale',
    name: 'Scale',
    base_price_cents: 49_900,
    included_requests: 20_000_000,
    hard_cap: false,
    overage_unit_requests: 10_000,
    overage_unit_price_cents: 25,
    max_resources: null,
    max_webhooks: 16,
  },
]);

const FIELDS = [
  'id',
  'name',
  'base_price_cents',
  'included_requests',
  'hard_cap',
  'overage_unit_requests',
  'overage_unit_price_cents',
  'max_resources',
  'max_webhooks',
] as const;

const NULLABLE_COUNTS = [
  'included_requests',
  'overage_unit_requests',
  'overage_unit_price_cents',
  'max_resources',
  'max_webhooks',
] as const;

export class PlansFileError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
    this.name = 'PlansFileError';
  }
}

/**
 * Validates the JSON text of a plans file (docs/billing.md#plans-file: `{"plans": [...]}`); returns the plans or throws
 * PlansFileError with one message per problem, each naming the plan and the field.
 */
export function parsePlans(text: string, source = 'PLANS_FILE'): Plan[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new PlansFileError([`${source} is not valid JSON (${(err as Error).message})`]);
  }
  const list = (doc as { plans?: unknown } | null)?.plans;
  if (doc === null || typeof doc !== 'object' || !Array.isArray(list) || list.length === 0) {
    throw new PlansFileError([`${source} must be a JSON object {"plans": [...]} with at least one plan`]);
  }
  const problems: string[] = [];
  const plans: Plan[] = [];
  const seen = new Set<string>();
  list.forEach((raw, i) => {
    const p = raw as Record<string, unknown>;
    const idOk =
      p !== null && typeof p === 'object' && typeof p.id === 'string' && /^[a-z][a-z0-9_-]{0,31}$/.test(p.id);
    const label = idOk ? `plan "${p.id as string}"` : `plans[${i}]`;
    const bad = (field: string, want: string) =>
      problems.push(
        p !== null && typeof p === 'object' && !(field in p)
          ? `${source}: ${label} has no field "${field}"; add it: ${want}`
          : `${source}: ${label} field "${field}" must be ${want}; got ${JSON.stringify(p?.[field])}`,
      );
    if (p === null || typeof p !== 'object' || Array.isArray(p)) {
      problems.push(`${source}: plans[${i}] must be an object`);
      return;
    }
    for (const k of Object.keys(p)) {
      if (!(FIELDS as readonly string[]).includes(k)) problems.push(`${source}: ${label} has unknown field "${k}"`);
    }
    if (!idOk) bad('id', 'lower-case letters, digits, - or _ (1..32, starting with a letter)');
    else if (seen.has(p.id as string)) problems.push(`${source}: ${label} appears twice`);
    else seen.add(p.id as string);
    if (typeof p.name !== 'string' || p.name.length < 1 || p.name.length > 100)
      bad('name', 'a string of 1..100 characters');
    if (!isCount(p.base_price_cents)) bad('base_price_cents', 'a non-negative integer (cents)');
    if (typeof p.hard_cap !== 'boolean') bad('hard_cap', 'true or false');
    for (const f of NULLABLE_COUNTS) if (!(p[f] === null || isCount(p[f]))) bad(f, 'a non-negative integer or null');
    if (p.overage_unit_requests === 0) bad('overage_unit_requests', 'at least 1 (or null)');
    if (p.hard_cap === true && p.included_requests === null) bad('included_requests', 'a number when hard_cap is true');
    if (p.hard_cap === false && p.included_requests !== null) {
      if ((p.overage_unit_requests === null) !== (p.overage_unit_price_cents === null)) {
        bad('overage_unit_price_cents', 'set together with overage_unit_requests (both numbers or both null)');
      }
    }
    plans.push(
      Object.fromEntries(FIELDS.map((f) => [f, p[f] ?? (f === 'hard_cap' ? false : null)])) as unknown as Plan,
    );
  });
  if (problems.length === 0 && !seen.has('free')) {
    problems.push(`${source}: a plan with id "free" is required (every workspace starts on it)`);
  }
  if (problems.length > 0) throw new PlansFileError(problems);
  return plans;
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** The plans in effect: PLANS_FILE's when set (read and validated), else the defaults. */
export function loadPlans(file: string | undefined): readonly Plan[] {
  if (file === undefined) return DEFAULT_PLANS;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new PlansFileError([
      `PLANS_FILE ${JSON.stringify(file)} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    ]);
  }
  return Object.freeze(parsePlans(text, `PLANS_FILE ${JSON.stringify(file)}`));
}
