// A typed webhook receiver for the Workspace Service, with the TypeScript client's verifier: the event is
// a union discriminated by `event`, so each `case` below sees its own `data` (docs/api.md#event-reference).
//   npm install @workspace-service/client
//   WEBHOOK_SECRET=whsec_… PORT=3000 node --experimental-strip-types receiver-typed.ts
import http from 'node:http';
import { verifyWebhook, type WebhookEvent, WebhookVerificationError } from '@workspace-service/client/webhooks';

const secret = (process.env.WEBHOOK_SECRET ?? '').split(' ').filter(Boolean);

/** What this receiver does with each event; the compiler checks every `data` field it reads. */
function handle(event: WebhookEvent): string {
  switch (event.event) {
    case 'resource.created':
    case 'resource.updated':
    case 'resource.status_changed':
    case 'resource.deleted':
      return `resource ${event.data.resource_id}: ${event.event}`;
    case 'key.created':
    case 'key.revoked':
      return `key ${event.data.key.name} (${event.data.key.env}): ${event.event}`;
    case 'key.rolled':
      return `key ${event.data.key.name} rolled; the old one stops at ${event.data.old_expires_at}`;
    case 'key.expiring':
      return `key ${event.data.key.name} stops working at ${event.data.expires_at}`;
    case 'member.invited':
    case 'member.joined':
    case 'member.removed':
      return `${event.data.member.email}: ${event.event}`;
    case 'member.role_changed':
      return `${event.data.member.email}: ${event.data.previous_role} → ${event.data.member.role}`;
    case 'webhook.disabled':
      return `endpoint ${event.data.webhook_id} disabled (${event.data.reason})`;
    case 'webhook.enabled':
      return `endpoint ${event.data.webhook_id} enabled`;
    case 'delivery.exhausted':
      return `${event.data.event_type} ${event.data.event_id} never reached ${event.data.webhook_id} (last status ${event.data.last_response_status ?? 'none'})`;
    case 'usage.threshold':
      return `usage at ${event.data.threshold} %: ${event.data.billable_requests} of ${event.data.included_requests}`;
    case 'usage.cap_reached':
      return `the plan's cap is reached until ${event.data.period_end}`;
    case 'invoice.finalized':
    case 'invoice.payment_succeeded':
    case 'invoice.payment_failed':
      return `invoice ${event.data.number} (${event.data.total_cents} ${event.data.currency}): ${event.event}`;
    case 'workspace.deletion_scheduled':
      return `the workspace will be deleted at ${event.data.delete_at}`;
    case 'workspace.deletion_cancelled':
      return 'the workspace will not be deleted';
    case 'export.ready':
      return `export ${event.data.export_id} is ready until ${event.data.expires_at}`;
    case 'webhook.test':
      return `test: ${event.data.message}`;
    default: {
      // A type added to the catalogue later: this line stops compiling until it has its case.
      const unknown: never = event;
      return `unhandled ${(unknown as { event: string }).event}`;
    }
  }
}

http
  .createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      try {
        const event = await verifyWebhook(Buffer.concat(chunks), req.headers, { secret });
        console.log(`${event.id} verified: ${handle(event)}`);
        res.writeHead(204).end();
      } catch (err) {
        if (!(err instanceof WebhookVerificationError)) throw err;
        console.log(`refused: ${err.code} ${err.message}`);
        res.writeHead(400).end();
      }
    });
  })
  .listen(Number(process.env.PORT || 3000));
