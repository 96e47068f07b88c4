import { createServer, type Server } from 'node:http';
import Provider from 'oidc-provider';
import { freePort } from './browser.js';

/** A client the provider knows: its id, secret and redirect URIs. */
export interface ProviderClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}

/**
 * A real OpenID provider (oidc-provider, certified) on loopback, for single sign-on tests. Its one
 * test-only part is the login page: it signs in the `login_hint` of the request (or `nextLogin`) at once,
 * without a form, and grants the requested scopes (no consent page). Everything else is the provider's:
 * discovery, PKCE, codes once, signed ID tokens with the nonce, issuer, audience and expiry.
 */
export async function startOidcProvider(opts: { clients: ProviderClient[]; idTokenTtlS?: number }) {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const state = { nextLogin: undefined as string | undefined, emailVerified: true };
  const provider = new Provider(issuer, {
    clients: opts.clients.map((c) => ({
      ...c,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    })),
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    ttl: {
      IdToken: opts.idTokenTtlS ?? 120,
      AccessToken: 600,
      AuthorizationCode: 60,
      Interaction: 600,
      Session: 600,
      Grant: 600,
    },
    findAccount: async (_ctx, sub) => ({
      accountId: sub,
      claims: async () => ({ sub, email: sub, email_verified: state.emailVerified, name: sub.split('@')[0] }),
    }),
    // No consent page: every client is granted what it asks for.
    loadExistingGrant: async (ctx) => {
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client?.clientId,
        accountId: ctx.oidc.session?.accountId,
      });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
  });
  provider.on('server_error', (_ctx, err) => console.error('oidc-provider server_error', err));
  const callback = provider.callback();
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith('/interaction/')) {
      void (async () => {
        try {
          const details = await provider.interactionDetails(req, res);
          const hint = typeof details.params.login_hint === 'string' ? details.params.login_hint : undefined;
          const accountId = state.nextLogin ?? hint ?? 'nobody@example.test';
          await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
        } catch (e) {
          res.statusCode = 500;
          res.end(String(e));
        }
      })();
      return;
    }
    callback(req, res);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  let open = true;
  return {
    issuer,
    provider,
    state,
    get open() {
      return open;
    },
    async close() {
      if (!open) return;
      open = false;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
export type OidcProvider = Awaited<ReturnType<typeof startOidcProvider>>;

/**
 * Follows a browser's redirects from an authorization URL to the redirect URI (cookies kept), as a
 * browser would; returns the query string the provider sends back.
 */
export async function followToRedirect(authorizationUrl: string, redirectUri: string): Promise<string> {
  const jar = new Map<string, string>();
  let url = authorizationUrl;
  for (let i = 0; i < 10; i++) {
    if (url.startsWith(redirectUri)) return new URL(url).search.slice(1);
    const res = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = (pair as string).indexOf('=');
      jar.set((pair as string).slice(0, eq), (pair as string).slice(eq + 1));
    }
    const location = res.headers.get('location');
    if (!location) throw new Error(`no redirect from ${url}: ${res.status} ${await res.text()}`);
    url = new URL(location, url).href;
  }
  throw new Error('too many redirects');
}
