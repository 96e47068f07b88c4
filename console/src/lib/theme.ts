// Light or dark: the system's choice (prefers-color-scheme) unless the person picked one, kept in
// localStorage. styles.css reads `data-theme` on <html>; no inline script is needed (the CSP forbids
// one), because main.ts applies the stored choice before React's first render.
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

/** Applies a choice to the page and remembers it. */
export function applyTheme(theme: Theme, remember = true): void {
  const root = document.documentElement;
  if (theme === 'system') delete root.dataset.theme;
  else root.dataset.theme = theme;
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
