import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiError } from './api/client';
import { App } from './app';
import { applyTheme, storedTheme } from './lib/theme';
import './styles.css';

// Before the first render, so a stored dark choice never flashes light.
applyTheme(storedTheme(), false);

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A 4xx will not change by retrying; a network error or a 5xx may.
      retry: (count, err) => count < 2 && !(err instanceof ApiError && err.status >= 400 && err.status < 500),
      refetchOnWindowFocus: false,
    },
  },
});

const root = document.getElementById('root');
if (root) {
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={queryClient}>
        <App />
      </QueryClientProvider>
    </StrictMode>,
  );
}
