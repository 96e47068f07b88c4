import { useState } from 'react';

/** Ten recovery codes, shown this once: copy or download them. */
export function RecoveryCodesOnce({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const text = `Workspace Service recovery codes (each works once)\n\n${codes.join('\n')}\n`;
  const download = () => {
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = 'workspace-service-recovery-codes.txt';
    a.click();
    URL.revokeObjectURL(url);
  };
  return (
    <section className="secret" aria-labelledby="codes-title">
      <p id="codes-title">
        <strong>Your recovery codes</strong> — shown once. Keep them somewhere safe: each signs you in once if you lose
        your phone.
      </p>
      <ol className="recovery-codes">
        {codes.map((c) => (
          <li key={c}>
            <code>{c}</code>
          </li>
        ))}
      </ol>
      <div className="actions">
        <button
          type="button"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(text);
              setCopied(true);
            } catch {
              setCopied(false);
            }
          }}
        >
          {copied ? 'Copied' : 'Copy codes'}
        </button>
        <button type="button" onClick={download}>
          Download codes
        </button>
        <button type="button" className="primary" onClick={onDone}>
          I have saved them
        </button>
      </div>
    </section>
  );
}
