/**
 * Checks every AWS call a function makes here against that function's role
 * as the stack deploys it, with an IAM policy simulator rather than our own
 * matching: @cloud-copilot/iam-simulate validates actions, resource types and
 * condition keys against AWS's published IAM data and evaluates the policy as
 * IAM does. A denied call throws what AWS would throw (AccessDeniedException),
 * naming the function, action, resource and key, and is reported to `onDenied`,
 * so a caller that swallows errors still cannot hide it.
 */
import { runSimulation } from '@cloud-copilot/iam-simulate';
import type { LocalAccount, LocalPolicies } from './local-policies.js';
import { requestsOfCommand, SUPPLIED_CONDITION_KEYS, type IamRequest } from './requests.js';
import type { PolicyDocument, QueueFunctionName } from './stack-policies.js';

export interface IamDecision {
  fn: QueueFunctionName;
  request: IamRequest;
  allowed: boolean;
}

/** Shaped like the SDK's service exceptions, so code that handles AWS errors meets the same thing it would on AWS. */
export class AccessDeniedException extends Error {
  override readonly name = 'AccessDeniedException';
  readonly $fault = 'client';
  readonly $metadata = { httpStatusCode: 400 };
}

export interface FunctionIamCheck {
  fn: QueueFunctionName;
  account: LocalAccount;
  /** Resolves when the role allows every request; rejects with AccessDeniedException at the first it does not. */
  authorize(requests: IamRequest[]): Promise<void>;
}

export interface IamCheck {
  policies: LocalPolicies;
  forFunction(fn: QueueFunctionName): FunctionIamCheck;
}

const LEADING_KEYS = 'dynamodb:leadingkeys';
/** Operators whose outcome depends only on which patterns a value equals or matches. */
const PATTERN_OPERATOR = /^(?:for(?:all|any)values:)?string(?:not)?(?:equals|like)(?:ifexists)?$/;
/** Distinct decisions are few (one per function, action, resource and key family); the bound only guards a mistake. */
const MAX_CACHED_DECISIONS = 20_000;

/** Every condition (operator, key, values) of a policy, keys lower-cased as IAM compares them. */
function conditionsOf(policy: PolicyDocument): { operator: string; key: string; values: string[] }[] {
  return policy.Statement.flatMap((statement) =>
    Object.entries<Record<string, unknown>>((statement.Condition ?? {}) as Record<string, Record<string, unknown>>).flatMap(([operator, byKey]) =>
      Object.entries(byKey).map(([key, values]) => ({
        operator: operator.toLowerCase(),
        key: key.toLowerCase(),
        values: (Array.isArray(values) ? values : [values]).map(String),
      })),
    ),
  );
}

const likePattern = (pattern: string): RegExp =>
  new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`, 's');

/**
 * A function of a leading key that two keys share whenever the policy must
 * decide alike for them: which of the policy's patterns each equals or
 * matches. Every job item then costs one simulation, not one per job id. Where
 * the policy uses the key some other way, the key itself is the class.
 */
function leadingKeyClasses(policy: PolicyDocument): (key: string) => string {
  const conditions = conditionsOf(policy).filter((condition) => condition.key === LEADING_KEYS);
  const patterns = conditions.flatMap((condition) => condition.values);
  const canClassify = conditions.every((condition) => PATTERN_OPERATOR.test(condition.operator)) && !patterns.some((value) => value.includes('${'));
  if (!canClassify) return (key) => key;
  const matchers = patterns.map((pattern) => ({ pattern, like: likePattern(pattern) }));
  return (key) => matchers.map(({ pattern, like }) => `${key === pattern ? 1 : 0}${like.test(key) ? 1 : 0}`).join('');
}

function assertCheckable(fn: QueueFunctionName, policy: PolicyDocument): void {
  for (const { key } of conditionsOf(policy)) {
    if (!SUPPLIED_CONDITION_KEYS.includes(key)) {
      throw new Error(`the ${fn} role is conditioned on ${key}, which the local IAM check does not supply; teach infra/local/aws/iam/requests.ts`);
    }
  }
}

function describe(request: IamRequest): string {
  const keys = Object.entries(request.context)
    .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join(',') : value}`)
    .join(' ');
  return `${request.action} on ${request.resource}${keys ? ` with ${keys}` : ''}`;
}

export function createIamCheck(policies: LocalPolicies, options: { onDecision?: (decision: IamDecision) => void } = {}): IamCheck {
  const { account } = policies;
  const decisions = new Map<string, Promise<boolean>>();

  const simulate = async (fn: QueueFunctionName, request: IamRequest): Promise<boolean> => {
    const policy = policies.functions[fn];
    const outcome = await runSimulation(
      {
        identityPolicies: [{ name: `${fn}-role`, policy }],
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        request: {
          principal: `arn:aws:iam::${account.accountId}:role/${fn}`,
          action: request.action,
          resource: { resource: request.resource, accountId: account.accountId },
          contextVariables: request.context,
        },
      },
      {},
    );
    if (outcome.resultType === 'error') {
      throw new Error(`the IAM simulator refused ${describe(request)} for the ${fn} role: ${JSON.stringify(outcome.errors)}`);
    }
    const results = outcome.resultType === 'single' ? [outcome.result] : outcome.results;
    const used = new Set(conditionsOf(policy).map((condition) => condition.key));
    const ignored = results.flatMap((result) => result.ignoredContextKeys ?? []).filter((key) => used.has(key.toLowerCase()));
    if (ignored.length > 0) throw new Error(`the IAM simulator ignored ${ignored.join(', ')} for ${describe(request)}, which the ${fn} role is conditioned on`);
    return outcome.overallResult === 'Allowed';
  };

  const functionChecks = new Map<QueueFunctionName, FunctionIamCheck>();
  const forFunction = (fn: QueueFunctionName): FunctionIamCheck => {
    const existing = functionChecks.get(fn);
    if (existing) return existing;
    const policy = policies.functions[fn];
    assertCheckable(fn, policy);
    const classOf = leadingKeyClasses(policy);
    const decide = (request: IamRequest): Promise<boolean> => {
      const context = Object.entries(request.context).map(([key, value]) =>
        key === 'dynamodb:LeadingKeys' ? [key, [...new Set((value as string[]).map(classOf))].sort()] : [key, value],
      );
      const cacheKey = JSON.stringify([fn, request.action, request.resource, context]);
      let decision = decisions.get(cacheKey);
      if (!decision) {
        if (decisions.size >= MAX_CACHED_DECISIONS) decisions.clear();
        decision = simulate(fn, request);
        decisions.set(cacheKey, decision);
        // A simulator failure is not a decision: the next call asks again.
        decision.catch(() => decisions.delete(cacheKey));
      }
      return decision;
    };
    const check: FunctionIamCheck = {
      fn,
      account,
      async authorize(requests) {
        for (const request of requests) {
          const allowed = await decide(request);
          options.onDecision?.({ fn, request, allowed });
          if (!allowed) {
            throw new AccessDeniedException(
              `AccessDeniedException from the local IAM check: the ${fn} function's role (infra/) does not allow ${describe(request)}`,
            );
          }
        }
      },
    };
    functionChecks.set(fn, check);
    return check;
  };
  return { policies, forFunction };
}

/** The parts of an SDK v3 client the local checks hook into. */
export interface SdkClient {
  middlewareStack: {
    add(middleware: (next: (args: any) => Promise<any>, context: any) => (args: any) => Promise<any>, options: Record<string, unknown>): void;
  };
}

/**
 * Checks every command `client` sends before it leaves the process, as IAM
 * would on arrival. It runs before the SDK's retries, so a denial is final, as
 * AccessDeniedException is on AWS.
 */
export function checkCallsOf<Client extends SdkClient>(client: Client, service: string, check: FunctionIamCheck): Client {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = String(context.commandName).replace(/Command$/, '');
      await check.authorize(requestsOfCommand(service, operation, args.input, check.account));
      return next(args);
    },
    { step: 'initialize', priority: 'high', name: 'localIamCheck', override: true },
  );
  return client;
}
