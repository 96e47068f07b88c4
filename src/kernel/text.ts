/** C0 and C1 control characters and DEL (U+0000–U+001F, U+007F–U+009F): line breaks, tabs, escapes. */
export const CONTROL_CLASS = '[\\u0000-\\u001f\\u007f-\\u009f]';
const CONTROL = new RegExp(CONTROL_CLASS);
const CONTROLS = new RegExp(CONTROL_CLASS, 'g');

/** The issue of a validation detail for a single-line name with a control character in it. */
export const CONTROL_CHARACTER_ISSUE = 'control_character';

/** Whether `s` holds a control character (what SingleLine refuses). */
export function hasControlCharacter(s: string): boolean {
  return CONTROL.test(s);
}

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * `s` on one line, each control character written as its escape (`\r`, `\n`, `\t`, `\u001b`): what
 * a stored name becomes in an email header or a line of text, whatever an older row holds.
 */
export function escapeControl(s: string): string {
  if (!CONTROL.test(s)) return s;
  return s.replace(CONTROLS, (c) => NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
