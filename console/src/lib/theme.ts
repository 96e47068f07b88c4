// Light or dark: the system's choice (prefers-color-scheme) unless the person picked one, kept in
// localStorage. styles.css reads `data-theme` on <html> (`light` or `dark`, always set: the system's
// answer while the person follows the system, kept current when it changes), so each palette is
// written once. No inline script is needed (the CSP forbids one): main.ts applies the stored choice
// before React's first render.
export const THEMES = ['system', 'light', 'dark'] as const;
export type Theme = (typeof THEMES)[number];

const KEY = 'wsvc-theme';

/** The stored choice ('system' when none, or when storage is unavailable). */
export function storedTheme(): Theme {
  try {
    const v = localStorage.getItem(KEY);
    return (THEMES as readonly string[]).includes(v ?? '') ? (v as Theme) : 'system';
  } catch {
    return 'system';
  }
}

let current: Theme = 'system';
let followingSystem = false;
const systemDark = () => window.matchMedia('(prefers-color-scheme: dark)');
const resolved = (theme: Theme) => (theme === 'system' ? (systemDark().matches ? 'dark' : 'light') : theme);

/** Applies a choice to the page and remembers it. */
export function applyTheme(theme: Theme, remember = true): void {
  const root = document.documentElement;
  current = theme;
  root.dataset.theme = resolved(theme);
  if (!followingSystem) {
    followingSystem = true;
    systemDark().addEventListener('change', () => {
      if (current === 'system') root.dataset.theme = resolved('system');
    });
  }
  if (!remember) return;
  try {
    if (theme === 'system') localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, theme);
  } catch {
    // Private mode without storage: the choice lasts for this page only.
  }
}

/** A colour of the current theme (a custom property of styles.css), for canvas charts. */
export function themeColor(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}
