import { FormatRegistry, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, ValueErrorType } from '@sinclair/typebox/compiler';
import { type ErrorDetail, ValidationError } from '../kernel/errors.js';
import { expected } from './expected.js';

// TypeBox ships no string formats; these are the ones our schemas use.
if (!FormatRegistry.Has('email')) FormatRegistry.Set('email', (v) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v));
if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', (v) => !Number.isNaN(Date.parse(v)));

const compiled = new WeakMap<TSchema, ReturnType<typeof TypeCompiler.Compile>>();

/** Checks a value against a schema outside HTTP (CLI input); throws ValidationError with details. */
export function assertValid<T extends TSchema>(schema: T, value: unknown): asserts value is Static<T> {
  let checker = compiled.get(schema);
  if (!checker) {
    checker = TypeCompiler.Compile(schema);
    compiled.set(schema, checker);
  }
  if (checker.Check(value)) return;
  const details: ErrorDetail[] = [...checker.Errors(value)].map((e) => {
    const field = e.path.split('/').filter(Boolean).join('.') || '(root)';
    // In words, with the value given (the CLI user typed it): docs/api.md#validation.
    const schema = e.schema as Record<string, unknown>;
    // A pattern that stands for one rule names its own issue and form (kernel/schemas.ts, SingleLine: control_character).
    const own = e.type === ValueErrorType.StringPattern && typeof schema['x-issue'] === 'string';
    const words = own ? String(schema['x-issue-expected']) : expected(schema);
    const message = words ? `${field} must be ${words}; got ${JSON.stringify(e.value)}` : `${field}: ${e.message}`;
    return { field, issue: own ? String(schema['x-issue']) : 'invalid_value', message };
  });
  throw new ValidationError(details.map((d) => d.message).join('; '), details);
}
