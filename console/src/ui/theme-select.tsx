import { useId, useState } from 'react';
import { applyTheme, storedTheme, THEMES, type Theme } from '../lib/theme';

const LABELS: Record<Theme, string> = { system: 'System', light: 'Light', dark: 'Dark' };

/** The light/dark choice: the system's by default, remembered in this browser once changed. */
export function ThemeSelect() {
  const id = useId();
  const [theme, setTheme] = useState<Theme>(storedTheme);
  return (
    <span className="theme-select">
      <label htmlFor={id}>Theme</label>
      <select
        id={id}
        value={theme}
        onChange={(e) => {
          const t = e.target.value as Theme;
          setTheme(t);
          applyTheme(t);
        }}
      >
        {THEMES.map((t) => (
          <option key={t} value={t}>
            {LABELS[t]}
          </option>
        ))}
      </select>
    </span>
  );
}
