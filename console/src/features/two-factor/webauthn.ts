import { api } from '../../api/client';

// @simplewebauthn/browser is loaded only when a passkey is used: the sign-in page's first load stays small.
const browser = () => import('@simplewebauthn/browser');

/** Whether this browser can use passkeys at all. */
export function passkeysSupported(): boolean {
  return typeof window !== 'undefined' && typeof window.PublicKeyCredential === 'function';
}

/** Asks the authenticator for a new passkey with the server's options; returns its response for the server. */
export async function createPasskey(): Promise<unknown> {
  const { startRegistration } = await browser();
  const { data } = await api<{ data: Parameters<typeof startRegistration>[0]['optionsJSON'] }>('/passkeys/options', {
    method: 'POST',
  });
  return startRegistration({ optionsJSON: data });
}

/** Asks the authenticator to sign the server's challenge: for a sign-in (no email) or a pending sign-in's second step. */
export async function signWithPasskey(path: string, body?: unknown): Promise<unknown> {
  const { startAuthentication } = await browser();
  const { data } = await api<{ data: Parameters<typeof startAuthentication>[0]['optionsJSON'] }>(path, {
    method: 'POST',
    body,
  });
  return startAuthentication({ optionsJSON: data });
}

/** What a failed WebAuthn call says, for a person: a cancelled prompt is not an error of theirs. */
export function passkeyProblem(e: unknown): Error {
  const name = (e as { name?: string })?.name;
  if (name === 'NotAllowedError') return new Error('The passkey prompt was closed or timed out; try again.');
  if (name === 'InvalidStateError') return new Error('This authenticator already holds a passkey for your account.');
  return e instanceof Error ? e : new Error('The passkey could not be used.');
}
