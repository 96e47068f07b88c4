// Every timestamp goes through here: the signed-in user's profile timezone (UTC when unset),
// with the zone's abbreviation; the exact UTC ISO value is the title (hover) of <Time>.

const LOCALES_FOR_ABBREVIATIONS = ['en-US', 'en-GB', 'en-AU', 'en-IN', 'en-CA', 'en-NZ', 'en-ZA', 'en-IE'];
/** Zones whose common abbreviation no English CLDR locale carries. */
const KNOWN: Record<string, string> = {
  'Japan Standard Time': 'JST',
  'Korean Standard Time': 'KST',
  'China Standard Time': 'CST',
  'Hong Kong Standard Time': 'HKT',
  'Singapore Standard Time': 'SGT',
  'Indochina Time': 'ICT',
  'Western Indonesia Time': 'WIB',
  'Philippine Standard Time': 'PST',
  'Taipei Standard Time': 'CST',
};

const cache = new Map<string, Intl.DateTimeFormat>();
function formatter(locale: string, options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const key = `${locale}|${JSON.stringify(options)}`;
  let f = cache.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat(locale, options);
    cache.set(key, f);
  }
  return f;
}

/** The zone's abbreviation at an instant (JST, CET, EST…), or GMT±h where none is common. */
export function zoneAbbreviation(date: Date, timeZone: string): string {
  let fallback = '';
  for (const locale of LOCALES_FOR_ABBREVIATIONS) {
    const name = formatter(locale, { timeZone, timeZoneName: 'short' })
      .formatToParts(date)
      .find((p) => p.type === 'timeZoneName')?.value;
    if (!name) continue;
    if (!/^GMT[+-−]/.test(name)) return name;
    fallback ||= name;
  }
  const long = formatter('en-US', { timeZone, timeZoneName: 'long' })
    .formatToParts(date)
    .find((p) => p.type === 'timeZoneName')?.value;
  return (long && KNOWN[long]) || fallback || timeZone;
}

/** `2026-11-22 19:15:30 JST` in the given zone. */
export function formatTime(iso: string, timeZone: string | null | undefined): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const tz = timeZone || 'UTC';
  const parts = formatter('en-CA', {
    timeZone: tz,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(date);
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}:${get('second')} ${zoneAbbreviation(date, tz)}`;
}

/** Every IANA zone the browser knows (for the profile's picker). */
export function timeZones(): string[] {
  const supported = (Intl as { supportedValuesOf?: (k: string) => string[] }).supportedValuesOf?.('timeZone') ?? [];
  return supported.includes('UTC') ? supported : ['UTC', ...supported];
}

/** `hour`, `6 hours`, `day`: the length of a period of a time series, in words. */
export function periodName(hours: number): string {
  return hours === 1 ? 'hour' : hours === 24 ? 'day' : `${hours} hours`;
}
