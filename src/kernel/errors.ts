/** One problem in a validation error (error `details` entry). */
export interface ErrorDetail {
  field: string;
  issue: string;
  message: string;
}

/** Base of every error the service throws on purpose; the HTTP layer maps it to the error body. */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export class ValidationError extends AppError {
  constructor(message: string, details: ErrorDetail[]) {
    super(400, 'validation_error', message, details);
  }
}

/** A validation error about one field. */
export function fieldError(field: string, issue: string, message: string): ValidationError {
  return new ValidationError(message, [{ field, issue, message }]);
}

export class NotFoundError extends AppError {
  constructor(what = 'resource') {
    super(404, 'not_found', `No such ${what}.`);
  }
}

export class ForbiddenError extends AppError {
  constructor(message = 'This API key does not have the permission for this action.') {
    super(403, 'insufficient_scope', message);
  }
}

export class UnauthorizedError extends AppError {
  /** `message`: a more precise reason than the code's own (a header that is not `Bearer <key>`). */
  constructor(code: 'missing_token' | 'invalid_token' | 'expired_token' | 'workspace_deleted', message?: string) {
    const messages = {
      missing_token: 'No API key given: send the header Authorization: Bearer <API_KEY>.',
      invalid_token:
        'No API key matches: check that the whole key was copied and that it was made on this server (wsvc keys list).',
      expired_token: 'The API key has been revoked or has expired; use an active key.',
      workspace_deleted:
        "The API key's workspace is scheduled for deletion: its keys no longer work. An admin can cancel the deletion in the console during the grace period.",
    } as const;
    super(401, code, message ?? messages[code]);
  }
}

/** A console session that has ended (sign-out, password change, expiry, removal) or never was: reads and writes alike. */
export class SessionEndedError extends AppError {
  constructor() {
    super(401, 'unauthenticated', 'Your console session has ended or is missing; sign in again.');
  }
}

export class ConflictError extends AppError {
  constructor(code: string, message: string) {
    super(409, code, message);
  }
}

/** The database cannot be reached: 503 until it returns. */
export class UnavailableError extends AppError {
  constructor(message = 'The service is temporarily unavailable; retry shortly.') {
    super(503, 'service_unavailable', message, undefined, { 'retry-after': '1' });
  }
}

/**
 * Not a failure: this request (same Idempotency-Key, same request) was answered before; the error
 * handler sends that stored answer again with `Idempotent-Replayed: true` (docs/api.md#idempotency).
 */
export class StoredResponse extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super('replay of a stored response');
  }
}
