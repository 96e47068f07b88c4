import { type SerializerFactory, SerializerSelector } from '@fastify/fast-json-stringify-compiler';

/**
 * Fastify's response serializers (fast-json-stringify, its default), each compiled once per distinct
 * schema instead of once per route and status (docs/performance.md#response-serializers).
 *
 * Fastify compiles one serializer for every status of every route, and each compile checks the
 * schema and every shared schema (`app.addSchema`) again: about 970 compiles and 3 s of one core to
 * start the app on a 2-core machine of CI's kind, most of them for the same error body. A serializer
 * depends only on its schema, the shared schemas and the options, so compiles are kept under those,
 * as text: 256 distinct ones, and an app built again in the same process (a test starting a second
 * app) reuses them all.
 */
const compiled = new Map<string, Map<string, ReturnType<ReturnType<SerializerFactory>>>>();
const fastJsonStringify = SerializerSelector();

export const sharedSerializers: SerializerFactory = (externalSchemas, options) => {
  const compile = fastJsonStringify(externalSchemas, options);
  const inputs = JSON.stringify([externalSchemas ?? null, options ?? null]);
  let bySchema = compiled.get(inputs);
  if (!bySchema) {
    bySchema = new Map();
    compiled.set(inputs, bySchema);
  }
  const mine = bySchema;
  return (route) => {
    const key = JSON.stringify(route.schema);
    let serialize = mine.get(key);
    if (!serialize) {
      serialize = compile(route);
      mine.set(key, serialize);
    }
    return serialize;
  };
};
