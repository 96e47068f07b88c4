import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { MeterStats } from '../modules/usage/meter.js';
import { errorBody } from './errors.js';

/** Seconds; the HTTP latency histogram's buckets. */
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * GET /metrics in Prometheus text (docs/operations.md#metrics), only when METRICS_TOKEN is set and
 * only to `Authorization: Bearer <METRICS_TOKEN>`: process and Node.js metrics under their standard
 * names, and the service's own, prefixed `wsvc_`: HTTP requests by route template
 * and status with a latency histogram, the delivery queue depth, this process's delivery attempt
 * outcomes, and metering flushes with their lag. One registry per app (tests run several apps).
 */
export function installMetrics(
  app: FastifyInstance,
  deps: {
    token: string;
    /** Deliveries waiting for an attempt (the webhooks module's deliveries service). */
    pendingDeliveries(): Promise<number>;
    meter: MeterStats;
    deliveries: { readonly claimed: number; readonly succeeded: number; readonly failed: number };
  },
): void {
  const register = new Registry();
  // The standard process and Node.js series keep their standard names (process_cpu_seconds_total,
  // nodejs_eventloop_lag_seconds…), which the usual Node.js dashboards and alerts query; only the
  // service's own series are prefixed wsvc_.
  collectDefaultMetrics({ register });
  const requests = new Counter({
    name: 'wsvc_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'],
    registers: [register],
  });
  const duration = new Histogram({
    name: 'wsvc_http_request_duration_seconds',
    help: 'HTTP request latency, by method and route template.',
    labelNames: ['method', 'route'],
    buckets: HTTP_BUCKETS,
    registers: [register],
  });
  new Gauge({
    name: 'wsvc_delivery_queue_depth',
    help: 'Deliveries waiting for an attempt (pending), across every worker.',
    registers: [register],
    async collect() {
      this.set(await deps.pendingDeliveries());
    },
  });
  new Counter({
    name: 'wsvc_delivery_attempts_total',
    help: "Delivery attempts made by this process's worker, by outcome.",
    labelNames: ['outcome'],
    registers: [register],
    collect() {
      this.reset();
      this.inc({ outcome: 'succeeded' }, deps.deliveries.succeeded);
      this.inc({ outcome: 'failed' }, deps.deliveries.failed);
    },
  });
  new Counter({
    name: 'wsvc_usage_flushes_total',
    help: 'Usage meter flushes, by result.',
    labelNames: ['result'],
    registers: [register],
    collect() {
      this.reset();
      this.inc({ result: 'ok' }, deps.meter.flushes);
      this.inc({ result: 'failed' }, deps.meter.failedFlushes);
    },
  });
  new Gauge({
    name: 'wsvc_usage_flush_lag_seconds',
    help: 'Age of the oldest request the last usage flush wrote.',
    registers: [register],
    collect() {
      this.set(deps.meter.lastFlushLagMs / 1000);
    },
  });
  new Counter({
    name: 'wsvc_request_log_dropped_total',
    help: 'Failed requests not logged because too many waited for a flush.',
    registers: [register],
    collect() {
      this.reset();
      this.inc(deps.meter.droppedFailures);
    },
  });

  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    requests.inc({ method: request.method, route, status: reply.statusCode });
    duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });

  const expected = digest(`Bearer ${deps.token}`);
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    const given = digest(req.headers.authorization ?? '');
    if (!timingSafeEqual(given, expected)) {
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer')
        .send(errorBody(req, 'invalid_token', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.'));
    }
    reply.header('content-type', register.contentType);
    return register.metrics();
  });
}

// Equal-length digests, so the comparison takes the same time whatever was sent.
function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
