import { useEffect } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { ActivityPage } from './pages/activity';
import { CustomersPage } from './pages/customers';
import { DeliveriesPage } from './pages/deliveries';
import { JobPage } from './pages/job';
import { JobsPage } from './pages/jobs';
import { OverviewPage } from './pages/overview';
import { SignInPage } from './pages/sign-in';
import { WebhooksPage } from './pages/webhooks';
import { signOut, useSession } from './session';

/**
 * The pages, in the navigation's order: a plain list, so a page is one entry here and one route below.
 */
const NAV: ReadonlyArray<{ href: string; label: string }> = [
  { href: '/console/overview', label: 'Overview' },
  { href: '/console/activity', label: 'Activity' },
  { href: '/console/jobs', label: 'Jobs' },
  { href: '/console/webhooks', label: 'Webhooks' },
  { href: '/console/deliveries', label: 'Deliveries' },
  { href: '/console/customers', label: 'Customers' },
];

/** Where a signed-in user lands. */
const HOME = '/console/overview';

function Shell() {
  const session = useSession();
  const { path, route } = useLocation();
  useEffect(() => {
    if (session && (path === '/console' || path === '/console/' || path === '/console/sign-in'))
      route(HOME, true);
  }, [session, path]);
  if (!session) return <SignInPage />;
  return (
    <div class="shell">
      <header class="top">
        <span class="brand">sfa-backoffice console</span>
        <nav aria-label="Pages">
          <ul>
            {NAV.map((entry) => (
              <li key={entry.href}>
                <a href={entry.href} aria-current={path.startsWith(entry.href) ? 'page' : undefined}>
                  {entry.label}
                </a>
              </li>
            ))}
            <li>
              <a href="/docs">API reference</a>
            </li>
          </ul>
        </nav>
        <button type="button" class="secondary" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main>
        <Router>
          <Route path="/console/overview" component={OverviewPage} />
          <Route path="/console/activity" component={ActivityPage} />
          <Route path="/console/jobs" component={JobsPage} />
          <Route path="/console/jobs/:id" component={JobPage} />
          <Route path="/console/webhooks" component={WebhooksPage} />
          <Route path="/console/deliveries" component={DeliveriesPage} />
          <Route path="/console/customers" component={CustomersPage} />
          <Route default component={OverviewPage} />
        </Router>
      </main>
    </div>
  );
}

export function App() {
  return (
    <LocationProvider scope="/console">
      <Shell />
    </LocationProvider>
  );
}
