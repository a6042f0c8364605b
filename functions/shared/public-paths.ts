/**
 * The paths whose GET needs no key: the api serves them, the stack routes them past the authorizer, and the
 * local gateway does the same. Apart from functions/api/dashboard.ts, so synth reads them without loading
 * the dashboard's generated bundle.
 */
export const DASHBOARD_PATHS = { page: '/', script: '/dashboard/app.js', styles: '/dashboard/app.css' } as const;

/** Paths whose GET API Gateway serves without the authorizer; every other route must be wired with it. */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set(['/health', '/openapi.json', ...Object.values(DASHBOARD_PATHS)]);
