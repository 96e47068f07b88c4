import { describe, expect, it } from 'vitest';
import { sharedSerializers } from './serializers.js';

// Backends: sqlite — response serializers kept by schema text, no storage
// Tier: quick

const route = (schema: unknown, httpStatus = '200') => ({ method: 'GET', url: '/x', httpStatus, schema });
const Shared = { $id: 'Shared', type: 'object', properties: { n: { type: 'integer' } } };

describe('sharedSerializers', () => {
  it('compiles a schema once: an equal schema, in this app or the next, gets the same serializer', () => {
    const a = sharedSerializers({ Shared }, {});
    const b = sharedSerializers({ Shared: structuredClone(Shared) }, {});
    const schema = () => ({ type: 'object', properties: { id: { type: 'string' }, s: { $ref: 'Shared#' } } });
    const first = a(route(schema()));
    expect(a(route(schema(), '404'))).toBe(first);
    expect(b(route(schema()))).toBe(first);
    // It drops what the schema does not declare, as fast-json-stringify does.
    expect(JSON.parse(first({ id: 'r1', s: { n: 2, x: 1 }, extra: true }))).toEqual({ id: 'r1', s: { n: 2 } });
  });

  it('compiles again for another schema, other shared schemas or other options', () => {
    const base = sharedSerializers({ Shared }, {});
    const schema = { type: 'object', properties: { s: { $ref: 'Shared#' } } };
    const one = base(route(schema));
    expect(base(route({ type: 'object', properties: { t: { type: 'string' } } }))).not.toBe(one);
    const otherShared = { ...Shared, properties: { n: { type: 'string' } } };
    const two = sharedSerializers({ Shared: otherShared }, {})(route(schema));
    expect(two).not.toBe(one);
    expect(JSON.parse(two({ s: { n: 'x' } }))).toEqual({ s: { n: 'x' } });
    expect(sharedSerializers({ Shared }, { rounding: 'floor' })(route(schema))).not.toBe(one);
  });
});
