import { type ReactNode, useId, useState } from 'react';
import { Link } from 'react-router';
import type { ApiKey, Delivery, List, Webhook } from '../../api/types';
import { useV1Mutation } from '../../lib/mutations';
import { useScopedQuery } from '../../lib/queries';
import { useCurrent, usePathTo } from '../../lib/session';
import { Badge } from '../../ui/primitives';
import { ErrorState, FormError, Loading } from '../../ui/states';
import { ReceiverSnippets } from './receiver-snippets';

/** Per browser, per workspace and environment: the person hid the steps (docs/console.md#setup-checklist). */
const hiddenKey = (ws: string, env: string) => `wsvc-setup-hidden:${ws}:${env}`;

function readHidden(key: string): boolean {
  try {
    return localStorage.getItem(key) === '1';
  } catch {
    return false;
  }
}

/**
 * The three steps to a first verified webhook, each done or not from the environment's own data:
 * an API key made in the console or API, or used (the keys `wsvc workspaces create` prints count
 * once used; until then the step says so, as "Use an API key"); an endpoint; a succeeded delivery. Admins only manage endpoints and read
 * deliveries: the others see those two steps as an admin's, never an error. Asked again every 5 s,
 * so a step turns done by itself. Render it with `key` = workspace and environment.
 */
export function SetupChecklist() {
  const { scope, isAdmin } = useCurrent();
  const to = usePathTo();
  const storageKey = hiddenKey(scope.ws, scope.env);
  const [hidden, setHidden] = useState(() => readHidden(storageKey));
  const titleId = useId();
  const live = { live: true };
  const keys = useScopedQuery<List<ApiKey>>('/v1/keys', { env: scope.env, limit: '100', order: 'desc' }, !hidden, live);
  const endpoints = useScopedQuery<List<Webhook>>(
    '/v1/webhooks',
    { limit: '1', order: 'desc' },
    isAdmin && !hidden,
    live,
  );
  const delivered = useScopedQuery<List<Delivery>>(
    '/v1/deliveries',
    { status: 'succeeded', limit: '1' },
    isAdmin && !hidden,
    live,
  );
  if (hidden) return null;
  const hide = () => {
    try {
      localStorage.setItem(storageKey, '1');
    } catch {
      // Private windows may refuse: hidden until the page is left.
    }
    setHidden(true);
  };
  const queries = isAdmin ? [keys, endpoints, delivered] : [keys];
  const failed = queries.find((q) => q.error);
  const frame = (children: ReactNode) => (
    <section className="card setup" aria-labelledby={titleId}>
      <h2 id={titleId}>Your first verified webhook</h2>
      {children}
    </section>
  );
  if (failed)
    return frame(
      <ErrorState
        error={failed.error}
        retry={() => {
          for (const q of queries) q.refetch();
        }}
      />,
    );
  if (!keys.data || (isAdmin && (!endpoints.data || !delivered.data))) {
    return frame(<Loading what="Checking the setup" />);
  }
  const keyDone = keys.data.data.some(
    (k) => k.status === 'active' && (k.created_by !== null || k.last_used_at !== null),
  );
  // The keys `wsvc workspaces create` printed (made by no one in the console or API), not used yet.
  const printed = !keyDone && keys.data.data.some((k) => k.status === 'active' && k.created_by === null);
  // Only an admin can tell (webhooks:read); for the others the checklist is about their own key.
  if (!isAdmin && keyDone) return null;
  const endpointDone = (endpoints.data?.meta.total ?? 0) > 0;
  const deliveryDone = (delivered.data?.meta.total ?? 0) > 0;
  const done = [keyDone, endpointDone, deliveryDone].filter(Boolean).length;
  if (isAdmin && done === 3) {
    return (
      <section className="setup-done" aria-label="Setup">
        <p>
          <Badge tone="good">Setup complete</Badge> An API key, an endpoint and a verified delivery in{' '}
          {scope.env === 'live' ? 'live' : 'test'} data.
        </p>
        <button type="button" onClick={hide}>
          Hide
        </button>
      </section>
    );
  }
  const endpoint = endpoints.data?.data[0];
  return frame(
    <>
      <div className="setup-head">
        <p className="muted">
          {isAdmin
            ? `${done} of 3 done. Three steps from an empty workspace to a delivery your own code has verified.`
            : 'Three steps to a delivery your code has verified; an admin of the workspace does the endpoint and the test event.'}
        </p>
        <button type="button" onClick={hide}>
          Hide these steps
        </button>
      </div>
      <ol className="steps">
        <Step title={printed ? 'Use an API key' : 'Create an API key'} state={keyDone ? 'done' : 'todo'}>
          {printed ? (
            <p>
              <code>wsvc workspaces create</code> printed a live and a test key: this step is done once your code calls
              the API with one. No longer have them? Create another.
            </p>
          ) : (
            <p>Your programs call the API with it; it is shown once, when it is made.</p>
          )}
          <Link to={to('/settings/keys')}>Create an API key</Link>
        </Step>
        <Step title="Add a webhook endpoint" state={isAdmin ? (endpointDone ? 'done' : 'todo') : 'admin'}>
          <p>
            The URL where your receiver listens. Keep its signing secret (<code>whsec_</code>…): the receiver below
            needs it.
          </p>
          {isAdmin ? <Link to={to('/webhooks')}>Add a webhook endpoint</Link> : null}
        </Step>
        <Step title="Receive a verified delivery" state={isAdmin ? (deliveryDone ? 'done' : 'todo') : 'admin'}>
          <p>
            Run the receiver below with the endpoint's secret, then send a test event: this step is done when the
            receiver answers with a 2xx.
          </p>
          {isAdmin ? <SendTestEvent endpoint={endpoint} /> : null}
        </Step>
      </ol>
      <ReceiverSnippets />
    </>,
  );
}

/** One step: its title, whether it is done (or an admin's to do), and what to do. */
function Step({ title, state, children }: { title: string; state: 'done' | 'todo' | 'admin'; children: ReactNode }) {
  return (
    <li className={`step step-${state}`}>
      <h3>
        {title}{' '}
        {state === 'done' ? (
          <Badge tone="good">Done</Badge>
        ) : state === 'admin' ? (
          <Badge>Ask an admin</Badge>
        ) : (
          <Badge tone="warn">To do</Badge>
        )}
      </h3>
      {children}
    </li>
  );
}

/** "Send a test event" to the newest endpoint, and where to see how it went. */
function SendTestEvent({ endpoint }: { endpoint: Webhook | undefined }) {
  const to = usePathTo();
  const test = useV1Mutation('post', '/v1/webhooks/{id}/test');
  if (!endpoint) return <p className="muted">Add an endpoint first.</p>;
  const name = endpoint.label ?? endpoint.url;
  if (endpoint.status !== 'enabled') {
    return (
      <p className="muted">
        The newest endpoint, <Link to={to(`/webhooks/${endpoint.id}`)}>{name}</Link>, is disabled: enable it on its page
        first.
      </p>
    );
  }
  const sent = test.data?.data.id;
  return (
    <>
      <p className="inline-actions">
        <button
          type="button"
          className="primary"
          disabled={test.isPending}
          onClick={() => test.mutate({ params: { path: { id: endpoint.id } } })}
        >
          Send a test event
        </button>{' '}
        to{' '}
        <Link className="wrap-anywhere" to={to(`/webhooks/${endpoint.id}`)}>
          {name}
        </Link>
      </p>
      {sent ? (
        <p className="notice" role="status">
          Test event queued as <code>{sent}</code>.{' '}
          <Link to={to(`/webhooks/${endpoint.id}?delivery=${sent}`)}>See its attempts</Link> if the step does not turn
          done.
        </p>
      ) : null}
      <FormError error={test.error} />
    </>
  );
}
