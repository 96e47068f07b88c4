import { useQueryClient } from '@tanstack/react-query';
import { Suspense, useEffect, useState } from 'react';
import { Navigate, NavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { api } from '../api/client';
import { CurrentProvider, SESSION_KEY, useScopeParams, useSessionQuery } from '../lib/session';
import { NotificationBell } from './bell';
import { DeletionBanner } from './deletion-banner';
import { Loading } from './states';
import { ThemeSelect } from './theme-select';

const NAV: { to: string; label: string; admin?: boolean }[] = [
  { to: '/overview', label: 'Overview' },
  { to: '/resources', label: 'Resources' },
  { to: '/events', label: 'Events' },
  { to: '/webhooks', label: 'Webhooks', admin: true },
  { to: '/usage', label: 'Usage' },
  { to: '/usage/requests', label: 'Failed requests' },
  { to: '/notifications', label: 'Notifications' },
];
const SETTINGS: typeof NAV = [
  { to: '/settings/keys', label: 'API Keys' },
  { to: '/settings/members', label: 'Members' },
  { to: '/settings/profile', label: 'Profile' },
  { to: '/settings/billing', label: 'Billing' },
  { to: '/settings/integrations', label: 'Integrations' },
  { to: '/settings/security', label: 'Sign-in security', admin: true },
  { to: '/settings/audit-log', label: 'Audit log', admin: true },
  { to: '/settings/workspace', label: 'Workspace', admin: true },
];

/** The signed-in frame: navigation, workspace switcher, live/test switch, sign-out. */
export function SignedInLayout() {
  const session = useSessionQuery();
  const { ws, env } = useScopeParams();
  const location = useLocation();
  const navigate = useNavigate();
  const qc = useQueryClient();
  // Below 768 px the navigation is a menu behind a button (styles.css); a link followed closes it.
  const [menuOpen, setMenuOpen] = useState(false);
  // biome-ignore lint/correctness/useExhaustiveDependencies: closes the menu whenever the page changes
  useEffect(() => setMenuOpen(false), [location.pathname]);
  if (session.isPending) return <Loading what="Loading the console" />;
  if (!session.data) return <Navigate to="/sign-in" replace state={{ from: location.pathname }} />;
  // A workspace requires a second factor this person lacks: that page before any other (docs/sign-in.md).
  if (session.data.stage === 'enrol') return <Navigate to="/two-factor-setup" replace />;
  const membership = session.data.memberships.find((m) => m.workspace_id === ws);
  if (!membership) {
    const first = session.data.memberships[0];
    return first ? <Navigate to={`/w/${first.workspace_id}/live/overview`} replace /> : <NoWorkspace />;
  }
  const isAdmin = membership.role === 'admin';
  const rest = location.pathname.replace(/^\/w\/[^/]+\/(live|test)/, '') || '/overview';
  const link = (to: string) => `/w/${ws}/${env}${to}`;
  const value = {
    session: session.data,
    membership,
    scope: { ws, env },
    isAdmin,
    canWriteResources: membership.role !== 'viewer',
    timeZone: membership.timezone || 'UTC',
  };
  const signOut = async () => {
    await api('/session', { method: 'DELETE' }).catch(() => undefined);
    qc.clear();
    qc.setQueryData(SESSION_KEY, null);
    navigate('/sign-in');
  };
  const navItems = (items: typeof NAV) =>
    items
      .filter((i) => !i.admin || isAdmin)
      .map((i) => (
        <li key={i.to}>
          <NavLink to={link(i.to)} end={i.to === '/usage'}>
            {i.label}
          </NavLink>
        </li>
      ));
  return (
    <CurrentProvider value={value}>
      <div className={`shell env-${env}`}>
        <a className="skip" href="#main">
          Skip to content
        </a>
        <header className="topbar">
          <button
            type="button"
            className="menu-toggle"
            aria-expanded={menuOpen}
            aria-controls="main-nav"
            onClick={() => setMenuOpen((o) => !o)}
          >
            Menu
          </button>
          <span className="brand">Workspace Service</span>
          <label className="switcher">
            <span className="visually-hidden">Workspace</span>
            <select
              aria-label="Workspace"
              value={ws}
              onChange={(e) => navigate(`/w/${e.target.value}/${env}/overview`)}
            >
              {session.data.memberships.map((m, _, all) => (
                <option key={m.workspace_id} value={m.workspace_id}>
                  {/* Two workspaces of the same name are told apart by their ids. */}
                  {all.filter((o) => o.workspace_name === m.workspace_name).length > 1
                    ? `${m.workspace_name} · ${m.workspace_id}`
                    : m.workspace_name}
                </option>
              ))}
            </select>
          </label>
          <fieldset className="env-switch">
            <legend className="visually-hidden">Environment</legend>
            <NavLink
              to={`/w/${ws}/live${rest}`}
              aria-current={env === 'live' ? 'page' : undefined}
              className={env === 'live' ? 'on' : ''}
            >
              Live
            </NavLink>
            <NavLink
              to={`/w/${ws}/test${rest}`}
              aria-current={env === 'test' ? 'page' : undefined}
              className={env === 'test' ? 'on' : ''}
            >
              Test
            </NavLink>
          </fieldset>
          {env === 'test' ? <span className="test-banner">Test data</span> : null}
          <span className="who">
            {session.data.email} · {membership.role}
          </span>
          <NotificationBell to={link('/notifications')} />
          <ThemeSelect />
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </header>
        <nav id="main-nav" className={menuOpen ? 'sidebar open' : 'sidebar'} aria-label="Main">
          <ul>{navItems(NAV)}</ul>
          <h2 className="nav-heading">Settings</h2>
          <ul>{navItems(SETTINGS)}</ul>
        </nav>
        <main id="main" className="content">
          <DeletionBanner />
          <Suspense fallback={<Loading />}>
            <Outlet />
          </Suspense>
        </main>
      </div>
    </CurrentProvider>
  );
}

function NoWorkspace() {
  return (
    <main className="auth">
      <h1>No workspace</h1>
      <p>You are not a member of any workspace. Ask an admin for an invite.</p>
    </main>
  );
}
