import { lazy, Suspense } from 'react';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router';
import { useSessionQuery } from './lib/session';
import { SignedInLayout } from './ui/layout';
import { ErrorState, Loading } from './ui/states';

// One chunk per page: the first load carries the frame and the sign-in page only.
const SignIn = lazy(() => import('./features/auth/sign-in'));
const SetPassword = lazy(() => import('./features/auth/set-password'));
const ForgotPassword = lazy(() => import('./features/auth/forgot-password'));
const SsoCallback = lazy(() => import('./features/auth/sso-callback'));
const Enrol = lazy(() => import('./features/two-factor/enrol-page'));
const Security = lazy(() => import('./features/security/security-page'));
const Overview = lazy(() => import('./features/overview/overview-page'));
const Keys = lazy(() => import('./features/keys/keys-page'));
const Webhooks = lazy(() => import('./features/webhooks/webhooks-page'));
const WebhookDetail = lazy(() => import('./features/webhooks/webhook-detail-page'));
const Events = lazy(() => import('./features/events/events-page'));
const Resources = lazy(() => import('./features/resources/resources-page'));
const ResourceDetail = lazy(() => import('./features/resources/resource-detail-page'));
const Members = lazy(() => import('./features/members/members-page'));
const Profile = lazy(() => import('./features/profile/profile-page'));
const Usage = lazy(() => import('./features/usage/usage-page'));
const Requests = lazy(() => import('./features/usage/requests-page'));
const Notifications = lazy(() => import('./features/notifications/notifications-page'));
const Integrations = lazy(() => import('./features/integrations/integrations-page'));
const Billing = lazy(() => import('./features/billing/billing-page'));
const Invoice = lazy(() => import('./features/billing/invoice-page'));
const AuditLog = lazy(() => import('./features/audit/audit-log-page'));
const Workspace = lazy(() => import('./features/workspace/workspace-page'));

export function App() {
  return (
    <BrowserRouter basename="/console">
      <Suspense fallback={<Loading />}>
        <Routes>
          <Route path="/sign-in" element={<SignIn />} />
          <Route path="/set-password" element={<SetPassword />} />
          <Route path="/forgot-password" element={<ForgotPassword />} />
          <Route path="/sso/callback" element={<SsoCallback />} />
          <Route path="/two-factor-setup" element={<Enrol />} />
          <Route path="/w/:ws/:env" element={<SignedInLayout />}>
            <Route index element={<Navigate to="overview" replace />} />
            <Route path="overview" element={<Overview />} />
            <Route path="resources" element={<Resources />} />
            <Route path="resources/:id" element={<ResourceDetail />} />
            <Route path="events" element={<Events />} />
            <Route path="webhooks" element={<Webhooks />} />
            <Route path="webhooks/:id" element={<WebhookDetail />} />
            <Route path="settings/keys" element={<Keys />} />
            <Route path="settings/members" element={<Members />} />
            <Route path="settings/profile" element={<Profile />} />
            <Route path="usage" element={<Usage />} />
            <Route path="usage/requests" element={<Requests />} />
            <Route path="notifications" element={<Notifications />} />
            <Route path="settings/billing" element={<Billing />} />
            <Route path="settings/billing/invoices/:id" element={<Invoice />} />
            <Route path="settings/integrations" element={<Integrations />} />
            <Route path="settings/security" element={<Security />} />
            <Route path="settings/audit-log" element={<AuditLog />} />
            <Route path="settings/workspace" element={<Workspace />} />
            <Route path="*" element={<NotFound />} />
          </Route>
          <Route path="*" element={<Home />} />
        </Routes>
      </Suspense>
    </BrowserRouter>
  );
}

/** `/console/`: the first workspace's overview, or the sign-in page. */
function Home() {
  const session = useSessionQuery();
  if (session.isPending) return <Loading />;
  if (session.error) return <ErrorState error={session.error} retry={() => session.refetch()} />;
  const first = session.data?.memberships[0];
  if (!session.data || !first) return <Navigate to="/sign-in" replace />;
  return <Navigate to={`/w/${first.workspace_id}/live/overview`} replace />;
}

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>There is no such page in the console.</p>
    </section>
  );
}
