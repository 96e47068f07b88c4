import { type KeyboardEvent, useId, useRef, useState } from 'react';
// The very files the tests run against real deliveries (test/delivery/receiver-snippets.test.ts).
import nodeReceiver from '../../../../docs/snippets/receiver.mjs?raw';
import pythonReceiver from '../../../../docs/snippets/receiver.py?raw';

const SNIPPETS = [
  { id: 'node', label: 'Node', file: 'receiver.mjs', run: 'node receiver.mjs', code: nodeReceiver },
  { id: 'python', label: 'Python', file: 'receiver.py', run: 'python3 receiver.py', code: pythonReceiver },
] as const;

/**
 * A receiver that verifies both signature headers, in tabs per language (arrow keys move between
 * them, as in WAI-ARIA's tabs pattern), with a copy button. The code scrolls inside its frame.
 */
export function ReceiverSnippets() {
  const [current, setCurrent] = useState(0);
  // What the last Copy did, per tab: copied, or the clipboard refused (e.g. over plain http).
  const [copied, setCopied] = useState<{ id: string; ok: boolean } | null>(null);
  const base = useId();
  const tabs = useRef<(HTMLButtonElement | null)[]>([]);
  const select = (i: number) => {
    setCurrent(i);
    setCopied(null);
    tabs.current[i]?.focus();
  };
  const onKeyDown = (e: KeyboardEvent) => {
    const n = SNIPPETS.length;
    const moves: Record<string, number> = { ArrowRight: current + 1, ArrowLeft: current - 1 + n, Home: 0, End: n - 1 };
    const next = moves[e.key];
    if (next === undefined) return;
    e.preventDefault();
    select(next % n);
  };
  return (
    <div className="snippets">
      <h3>A receiver that checks both signatures</h3>
      <div role="tablist" aria-label="Receiver language" className="tabs">
        {SNIPPETS.map((s, i) => (
          <button
            key={s.id}
            ref={(el) => {
              tabs.current[i] = el;
            }}
            type="button"
            role="tab"
            id={`${base}-tab-${s.id}`}
            aria-selected={i === current}
            aria-controls={`${base}-panel-${s.id}`}
            tabIndex={i === current ? 0 : -1}
            onClick={() => select(i)}
            onKeyDown={onKeyDown}
          >
            {s.label}
          </button>
        ))}
      </div>
      {SNIPPETS.map((s, i) => (
        <div
          key={s.id}
          role="tabpanel"
          id={`${base}-panel-${s.id}`}
          aria-labelledby={`${base}-tab-${s.id}`}
          hidden={i !== current}
        >
          <div className="snippet-bar">
            <p>
              Save as <code>{s.file}</code> and run <code className="wrap">WEBHOOK_SECRET=whsec_… {s.run}</code> (
              <code>PORT</code> defaults to 3000).
            </p>
            <button
              type="button"
              onClick={async () => {
                try {
                  await navigator.clipboard.writeText(s.code);
                  setCopied({ id: s.id, ok: true });
                } catch {
                  setCopied({ id: s.id, ok: false });
                }
              }}
            >
              Copy {s.file}
            </button>
            <span role="status" className="muted">
              {copied?.id !== s.id ? '' : copied.ok ? 'Copied.' : 'The browser refused: select the code and copy it.'}
            </span>
          </div>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: the code scrolls sideways and must be reachable by keyboard */}
          <section className="code snippet" tabIndex={0} aria-label={`${s.file} (${s.label})`}>
            <pre>
              <code>{s.code}</code>
            </pre>
          </section>
        </div>
      ))}
    </div>
  );
}
