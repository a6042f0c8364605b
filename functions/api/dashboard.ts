/**
 * The operator dashboard, served by the api function itself so it needs no
 * hosting of its own: a static page, its script and its styles. The page is
 * public (it holds nothing until a key is pasted into it); every number on it
 * comes from the JSON API, read with that key.
 */
import { DASHBOARD_SCRIPT, DASHBOARD_STYLES } from './dashboard-assets.generated.js';
import type { HttpResponse } from '../shared/http.js';

/**
 * Only the page's own script and styles run, the API is the only thing it
 * talks to, and no form can send the key anywhere.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Relative links, so the page also works under a base path. */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Delayed job queue</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="dashboard/app.css">
<script type="module" src="dashboard/app.js"></script>
</head>
<body>
<div id="app"><noscript>The dashboard needs JavaScript.</noscript></div>
</body>
</html>
`;

function asset(contentType: string, body: string): HttpResponse {
  return {
    statusCode: 200,
    headers: {
      'content-type': contentType,
      'content-security-policy': CONTENT_SECURITY_POLICY,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      // A new deployment's page and bundle are fetched again rather than mixed with cached ones.
      'cache-control': 'no-cache',
    },
    body,
  };
}

export const dashboardRoutes = {
  page: async () => asset('text/html; charset=utf-8', PAGE),
  script: async () => asset('text/javascript; charset=utf-8', DASHBOARD_SCRIPT),
  styles: async () => asset('text/css; charset=utf-8', DASHBOARD_STYLES),
};
