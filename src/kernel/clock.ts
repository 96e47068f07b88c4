/** Source of time, injected so that tests control it instead of sleeping. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A timestamp (docs/api.md#timestamps): ISO 8601 UTC with milliseconds and Z. */
export function isoAt(ms: number): string {
  return new Date(ms).toISOString();
}
