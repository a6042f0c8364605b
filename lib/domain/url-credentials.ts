/**
 * Credentials in an http target's URL. A job type's URL is shown to every key that may read the type,
 * while the signing secret never leaves the store after the type is created; a password or token in the
 * URL would be handed to all of them (and the worker sends `user:password@` as Basic auth). So a new URL
 * may carry none, and one stored before that rule is shown with its credentials hidden: the worker still
 * sends what is stored, so such a type keeps working.
 */

/** Query parameters that name a credential, compared lower-case without `-` and `_`. */
const CREDENTIAL_PARAMETERS = new Set([
  'key',
  'apikey',
  'accesskey',
  'token',
  'accesstoken',
  'authtoken',
  'idtoken',
  'refreshtoken',
  'secret',
  'clientsecret',
  'password',
  'passwd',
  'pwd',
  'auth',
  'authorization',
  'credential',
  'credentials',
  'signature',
  'sig',
  // S3 and GCS presigned URLs, Azure Functions, GitLab, and bare tokens and sessions.
  'xamzcredential',
  'xamzsignature',
  'xamzsecuritytoken',
  'xgoogcredential',
  'xgoogsignature',
  'code',
  'privatetoken',
  'jwt',
  'sessionid',
  'sessiontoken',
]);

const HIDDEN = '***';

const namesCredential = (parameter: string): boolean => CREDENTIAL_PARAMETERS.has(parameter.toLowerCase().replace(/[-_]/g, ''));

/** Why the URL may not be a target's, or undefined when it carries no credential. */
export function urlCredentialIssue(url: URL): string | undefined {
  const guidance =
    'the URL is shown to every key that may read the job type; let the downstream verify the signature headers made with the type\'s signing secret instead';
  if (url.username !== '' || url.password !== '') return `must not carry credentials (user:password@): ${guidance}`;
  // A fragment never reaches the downstream; where one is written, it is usually a token (`#access_token=`).
  if (url.hash !== '') return `must not carry a fragment (#…): it is never sent to the downstream; ${guidance}`;
  const parameter = [...url.searchParams.keys()].find(namesCredential);
  return parameter === undefined ? undefined : `must not carry credentials (the query parameter "${parameter}"): ${guidance}`;
}

/** The URL as the API shows it to admin keys: user, password, credential query values and the fragment replaced by `***`. */
export function urlWithoutCredentials(text: string): string {
  if (!URL.canParse(text)) return text;
  const url = new URL(text);
  if (urlCredentialIssue(url) === undefined) return text;
  if (url.username !== '') url.username = HIDDEN;
  if (url.password !== '') url.password = HIDDEN;
  for (const parameter of new Set(url.searchParams.keys())) {
    if (namesCredential(parameter)) url.searchParams.set(parameter, HIDDEN);
  }
  if (url.hash !== '') url.hash = HIDDEN;
  return url.toString();
}

/**
 * The URL as the API shows it to keys that only read the type: no name list can tell every credential a
 * query or fragment may carry, so every query value and the fragment are `***`; scheme, host, port and path
 * are kept (a secret in the path is shown: docs/guides/targets.md says to send secrets in headers or by signing).
 */
export function urlForReaders(text: string): string {
  if (!URL.canParse(text)) return text;
  const url = new URL(urlWithoutCredentials(text));
  const names = [...url.searchParams.keys()];
  if (names.length > 0) url.search = new URLSearchParams(names.map((name): [string, string] => [name, HIDDEN])).toString();
  if (url.hash !== '') url.hash = HIDDEN;
  return url.toString();
}
