import { useEffect, useState } from 'react';
import { LIVE_INTERVAL_MS } from '../lib/queries';

/**
 * "Live · updated 3 s ago" beside a page or list that asks again every few seconds
 * (docs/console.md#live-updates). `updatedAt` is the query's `dataUpdatedAt` (ms). Not a live
 * region: a line changing every second would talk over everything else.
 */
export function LiveIndicator({ updatedAt }: { updatedAt: number }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const seconds = updatedAt > 0 ? Math.max(0, Math.round((now - updatedAt) / 1000)) : null;
  return (
    <p className="live muted" data-testid="live">
      <span className="live-dot" aria-hidden="true" />
      Live, every {LIVE_INTERVAL_MS / 1000} s
      {seconds === null ? null : <> · updated {seconds < 2 ? 'just now' : `${seconds} s ago`}</>}
    </p>
  );
}
