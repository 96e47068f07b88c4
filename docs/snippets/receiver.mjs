// A webhook receiver for the Workspace Service. It checks both signatures of every delivery and
// answers 204 when they match, 400 when they don't. Node 20 or later, no packages:
//   WEBHOOK_SECRET=whsec_… PORT=3000 node receiver.mjs
// After rotating the endpoint's secret, give both until the old one expires:
//   WEBHOOK_SECRET="whsec_new… whsec_old…"
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';

const secrets = (process.env.WEBHOOK_SECRET ?? '').split(' ').filter(Boolean);
const port = Number(process.env.PORT || 3000);
const TOLERANCE_S = 5 * 60; // a webhook-timestamp further from now is refused (a replay)

const hmac = (key, data) => createHmac('sha256', key).update(data).digest();
const same = (a, b) => a.length === b.length && timingSafeEqual(a, b); // constant time

/** The signature headers that match; throws saying why the delivery is refused. */
function verify(body, headers) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  if (!id || !/^\d+$/.test(timestamp ?? '')) throw new Error('webhook-id or webhook-timestamp is missing');
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_S) {
    throw new Error('webhook-timestamp is more than 5 minutes away');
  }
  // Standard Webhooks: space-separated "v1,<base64>" entries (one per live secret), each an
  // HMAC-SHA256 of "id.timestamp.body" keyed with the base64-decoded part after "whsec_".
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]);
  const given = String(headers['webhook-signature'] ?? '')
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => Buffer.from(s.slice(3), 'base64'));
  const keys = secrets.map((s) => Buffer.from(s.replace(/^whsec_/, ''), 'base64'));
  if (!keys.some((key) => given.some((g) => same(g, hmac(key, signed))))) {
    throw new Error('webhook-signature matches no secret');
  }
  // X-Service-Signature: hex HMAC-SHA256 of the body, keyed with the whole secret string. While a
  // rotation overlaps (several v1 entries above) it is keyed with the old secret, so a receiver
  // that has only the new one relies on webhook-signature until the old secret expires.
  const service = Buffer.from(String(headers['x-service-signature'] ?? ''), 'hex');
  if (secrets.some((s) => same(service, hmac(s, body)))) return ['webhook-signature', 'X-Service-Signature'];
  if (given.length > 1) return ['webhook-signature'];
  throw new Error('X-Service-Signature matches no secret');
}

/** Says why it cannot listen, in one line, and how to choose another port; exits 1. */
function cannotListen(reason) {
  const other = Number.isInteger(port) && port > 0 && port < 65535 ? port + 1 : 3001;
  console.error(`${reason}. Choose another port: PORT=${other} node receiver.mjs, and use it in the endpoint's URL.`);
  process.exit(1);
}

if (secrets.length === 0) {
  console.error("Set WEBHOOK_SECRET to the endpoint's signing secret (whsec_...).");
  process.exit(1);
}
if (!Number.isInteger(port) || port < 0 || port > 65535) cannotListen(`PORT must be 0 to 65535; got "${process.env.PORT}"`);
http
  .createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks); // the exact bytes received: verify them before parsing
      try {
        const verified = verify(body, req.headers);
        const event = JSON.parse(body.toString('utf8'));
        console.log(`verified ${event.id} ${event.event} (${verified.join(', ')})`);
        res.writeHead(204).end(); // any 2xx within 15 s is a success
      } catch (err) {
        console.log(`refused: ${err.message}`);
        res.writeHead(400, { 'content-type': 'text/plain' }).end(err.message);
      }
    });
  })
  .on('error', (err) =>
    cannotListen(
      err.code === 'EADDRINUSE'
        ? `Port ${port} is already in use (another receiver, or another program)`
        : `Cannot listen on port ${port}: ${err.message}`,
    ),
  )
  .listen(port, () => console.log(`listening on port ${port}`));
