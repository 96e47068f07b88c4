import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

/**
 * Asserts a error: the status, `{"error": {code, message, request_id, details?}}` and
 * nothing else, request_id equal to the X-Request-Id header, JSON content type, no internals.
 * Returns the error object.
 */
export function expectError(res: LightMyRequestResponse, status: number, code: string) {
  expect({ status: res.statusCode, body: res.body.slice(0, 300) }).toMatchObject({ status });
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
  const body = JSON.parse(res.body);
  expect(Object.keys(body)).toEqual(['error']);
  const err = body.error;
  expect(err.code).toBe(code);
  expect(typeof err.message).toBe('string');
  expect(err.message.length).toBeGreaterThan(0);
  expect(err.request_id).toBe(res.headers['x-request-id']);
  for (const k of Object.keys(err)) expect(['code', 'message', 'request_id', 'details']).toContain(k);
  expect(res.body).not.toMatch(/ at .*\.ts:\d+|SQLITE_|select .* from|stack/i);
  return err as { code: string; message: string; request_id: string; details?: ErrorDetail[] };
}

export interface ErrorDetail {
  field: string;
  issue: string;
  message: string;
}

/** Asserts a 400 validation_error whose details contain each `{field, issue}` given. */
export function expectValidation(res: LightMyRequestResponse, ...problems: { field: string; issue?: string }[]) {
  const err = expectError(res, 400, 'validation_error');
  expect(Array.isArray(err.details)).toBe(true);
  for (const d of err.details ?? []) {
    expect(typeof d.message).toBe('string');
    expect(d.field.length).toBeGreaterThan(0);
  }
  for (const p of problems) expect(err.details).toContainEqual(expect.objectContaining(p));
  return err;
}

/** Asserts the rate-limit headers (docs/api.md#rate-limits) on an authenticated response. */
export function expectRateLimitHeaders(res: LightMyRequestResponse) {
  for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    expect(res.headers[h], `${h} on ${res.statusCode}`).toMatch(/^\d+$/);
  }
}
