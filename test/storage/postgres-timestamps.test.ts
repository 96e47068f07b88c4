import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { isoTimestamp } from '../../src/db/postgres.js';

// Backends: postgres — the text PostgreSQL sends for a timestamptz, read by the service's parser
// Tier: full — PostgreSQL only, and `npm test` runs on SQLite
// docs/performance.md, "pg's row parsing": src/db/postgres.ts isoTimestamp rearranges PostgreSQL's text of a
// timestamptz into the ISO string `new Date(text).toISOString()` gave before, without a Date; any text it does
// not recognise (another session time zone, a year outside 1000–9999, infinity) still goes through Date.
const pgUrl = process.env.TEST_DATABASE_URL;

describe.skipIf(!pgUrl)('PostgreSQL timestamps as ISO strings', () => {
  const client = new pg.Client({ connectionString: pgUrl, types: { getTypeParser: () => (v: string) => v } });
  const connected = client.connect();
  afterAll(() => client.end());

  const outcome = (f: (v: string) => string, v: string) => {
    try {
      return f(v);
    } catch (err) {
      return (err as Error).name;
    }
  };

  /** PostgreSQL's own text for timestamps spread over years 1–9999 and over every fraction length. */
  async function texts(zone: string): Promise<string[]> {
    await connected;
    await client.query(`set time zone '${zone}'`);
    const { rows } = await client.query<{ t: string }>(
      `select (timestamptz '0001-01-01 00:00:00+00' + g * interval '4831 days 13:07:11.123457'
               + (g % 7) * interval '0.1 second' + (g % 3) * interval '0.001 second') as t
       from generate_series(0, 755) g
       union all select unnest(array['2026-11-27 17:16:01+00', '2026-11-27 17:16:01.5+00', '2026-11-27 17:16:01.05+00',
         '2026-11-27 17:16:01.123456+00', '1999-12-31 23:59:59.999999+00', '0099-06-01 12:00:00+00'])::timestamptz`,
    );
    return rows.map((r) => r.t);
  }

  it('gives what Date gave for every text PostgreSQL sends in UTC, and in another time zone', async () => {
    for (const zone of ['UTC', 'Europe/Paris']) {
      const all = await texts(zone);
      expect(all.length).toBe(762);
      // Some old local times (Paris before 1911: `+00:09:21`) are texts Date cannot read: both throw then.
      const differ = all.filter((t) => outcome(isoTimestamp, t) !== outcome((v) => new Date(v).toISOString(), t));
      expect(differ).toEqual([]);
    }
    // The rearranged form is the one taken for the texts a UTC session sends (not only the fallback).
    expect(isoTimestamp('2026-11-27 17:16:01.05+00')).toBe('2026-11-27T17:16:01.050Z');
  });

  it('gives what Date gave for 200,000 UTC texts spread over years 1000–9999 and fraction lengths 0–6', () => {
    let seed = 36;
    const next = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const differ: string[] = [];
    for (let i = 0; i < 200_000; i++) {
      const ms = Date.UTC(1000, 0, 1) + next(2 ** 31 - 1) * 130_000 + next(1000);
      const iso = new Date(ms).toISOString();
      const frac = `${iso.slice(20, 23)}${String(next(1000)).padStart(3, '0')}`.slice(0, next(7)).replace(/0+$/, '');
      const text = `${iso.slice(0, 10)} ${iso.slice(11, 19)}${frac ? `.${frac}` : ''}+00`;
      if (isoTimestamp(text) !== new Date(text).toISOString()) differ.push(text);
    }
    expect(differ).toEqual([]);
  });

  it('throws on infinity as Date did', () => {
    expect(() => isoTimestamp('infinity')).toThrow(RangeError);
  });
});
