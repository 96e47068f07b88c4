import { Type } from '@sinclair/typebox';

/** C0 and C1 control characters and DEL (U+0000–U+001F, U+007F–U+009F): line breaks, tabs, escapes. */
const CONTROL_CLASS = '[\\u0000-\\u001f\\u007f-\\u009f]';
const CONTROL = new RegExp(CONTROL_CLASS);
const CONTROLS = new RegExp(CONTROL_CLASS, 'g');

/** The issue of a validation detail for a single-line name with a control character in it. */
export const CONTROL_CHARACTER_ISSUE = 'control_character';

/**
 * A single-line name (docs/api.md#names): resource, user, key and workspace names, webhook labels.
 * Lengths count code points; control characters are refused with a 400 naming the field, so a
 * name can never break a line of an email header, a log or the CLI's tables.
 */
export function SingleLine(opts: { minLength: number; maxLength: number; description: string }) {
  return Type.String({
    ...opts,
    pattern: `^[^${CONTROL_CLASS.slice(1)}*$`,
    // What breaking the pattern means, for the validators' issue and message (http/validation.ts, lib/validate.ts).
    'x-issue': CONTROL_CHARACTER_ISSUE,
    'x-issue-expected': 'a single line of text, without control characters such as line breaks or tabs',
  });
}

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
