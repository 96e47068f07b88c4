import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { AppError, ValidationError } from '../kernel/errors.js';
import { unstorableStrings } from './validation.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body's text as received (unset without a JSON body). */
    rawBody?: string;
  }
}

/** Deepest nesting of objects and arrays a JSON body may have (the body itself is level 1). */
export const MAX_JSON_DEPTH = 64;

/**
 * The JSON body parser (docs/api.md#errors: only `application/json`, anything else is 415; an empty body is "no
 * body"). The nesting limit is checked on the raw text by one loop before anything is parsed, so
 * a hostile body (1 MiB of `[[[[…`) costs one scan and no objects; nothing below recurses on the
 * call stack. Then `secure-json-parse` (`__proto__`/`constructor` refused) and the unstorable-string check (docs/api.md#validation) of
 * strings that cannot be stored.
 */
export function installJsonBody(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    // As received, for the failed-request log (docs/usage.md#request-log), even when it does not parse.
    req.rawBody = text;
    if (text === '') return done(null, undefined);
    if (nestedDeeperThan(text, MAX_JSON_DEPTH)) {
      const message = `body is nested deeper than ${MAX_JSON_DEPTH} levels of objects and arrays.`;
      return done(new ValidationError(message, [{ field: 'body', issue: 'too_deep', message }]), undefined);
    }
    let parsed: unknown;
    try {
      parsed = secureJson.parse(text, { protoAction: 'error', constructorAction: 'error' });
    } catch {
      return done(new AppError(400, 'invalid_json', 'The request body is not valid JSON.'), undefined);
    }
    const unstorable = unstorableStrings(parsed);
    if (unstorable.length > 0)
      return done(new ValidationError('The body has strings that cannot be stored.', unstorable));
    done(null, parsed);
  });
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether `{`/`[` outside strings nest deeper than `max` in `text`: one pass, no allocation,
 * stops at the first level too deep. Malformed JSON is left to the parser.
 */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}
