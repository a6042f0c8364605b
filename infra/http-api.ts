/** The HTTP API in front of the api function: its routes and authorizers, its stage with throttling and access logs. */
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpMethod, HttpNoneAuthorizer, HttpStage, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaAuthorizer, HttpLambdaResponseType } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { DASHBOARD_PATHS } from '../functions/shared/public-paths.js';
import { AUTHORIZED_ROUTES, KEY_AUTHORIZER_CACHE_TTL_S } from './api-gateway.js';
import type { QueueFunction } from './queue-function.js';
import type { StackSettings } from './settings.js';

type QueueFunctions = Record<'api' | 'authorizer', QueueFunction>;

export function createQueueHttpApi(scope: Construct, settings: StackSettings, functions: Pick<QueueFunctions, 'api' | 'authorizer'>): { httpApi: HttpApi; stage: HttpStage } {
  const authorizer = new HttpLambdaAuthorizer('ApiKeyAuthorizer', functions.authorizer.function, {
    responseTypes: [HttpLambdaResponseType.SIMPLE],
    identitySource: ['$request.header.Authorization'],
    // A revoked key stops working within this; the api also checks each key's expiry itself.
    resultsCacheTtl: Duration.seconds(KEY_AUTHORIZER_CACHE_TTL_S),
  });

  const integration = new HttpLambdaIntegration('ApiIntegration', functions.api.function);
  // Every request reaches the api function, as locally, so an unknown path gets the API's own 404 body.
  const httpApi = new HttpApi(scope, 'HttpApi', {
    description: 'Delayed job queue',
    createDefaultStage: false,
    defaultIntegration: integration,
    defaultAuthorizer: authorizer,
  });
  // The same authorizer without an identity source, so uncached and invoked even without a header.
  const callbackAuthorizer = new HttpLambdaAuthorizer('CallbackTokenAuthorizer', functions.authorizer.function, {
    responseTypes: [HttpLambdaResponseType.SIMPLE],
    identitySource: [],
    resultsCacheTtl: Duration.seconds(0),
  });
  const authorizers = { key: authorizer, callback: callbackAuthorizer };
  for (const route of AUTHORIZED_ROUTES) {
    httpApi.addRoutes({ path: route.path, methods: [HttpMethod[route.method]], integration, authorizer: authorizers[route.authorizer] });
  }
  addPublicRoutes(httpApi, integration);
  return { httpApi, stage: createStage(scope, settings, httpApi) };
}

/** The stage's access log line for each request, with API Gateway's $context variables; the local meter writes the same line to count its bytes. */
export const ACCESS_LOG_FORMAT = {
  requestId: '$context.requestId',
  ip: '$context.identity.sourceIp',
  requestTime: '$context.requestTime',
  method: '$context.httpMethod',
  path: '$context.path',
  routeKey: '$context.routeKey',
  status: '$context.status',
  responseLength: '$context.responseLength',
  latencyMs: '$context.responseLatency',
  integrationError: '$context.integrationErrorMessage',
} as const;

function createStage(scope: Construct, settings: StackSettings, httpApi: HttpApi): HttpStage {
  const accessLogs = new LogGroup(scope, 'ApiAccessLogs', { retention: settings.logRetention, removalPolicy: RemovalPolicy.DESTROY });
  return new HttpStage(scope, 'DefaultStage', {
    httpApi,
    stageName: '$default',
    autoDeploy: true,
    throttle: { rateLimit: settings.apiRateLimit, burstLimit: settings.apiBurstLimit },
    accessLogSettings: {
      destination: new LogGroupLogDestination(accessLogs),
      format: AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FORMAT)),
    },
  });
}

/** The routes that need no key, each acknowledged as public by design. */
function addPublicRoutes(httpApi: HttpApi, integration: HttpLambdaIntegration): void {
  const addPublic = (path: string, reason: string): void => {
    for (const route of httpApi.addRoutes({ path, methods: [HttpMethod.GET], integration, authorizer: new HttpNoneAuthorizer() })) {
      Validations.of(route).acknowledge({ id: 'AwsSolutions::AwsSolutions-APIG4', reason });
    }
  };
  // Its own route, public by design: a load balancer or uptime check needs no key.
  addPublic('/health', 'GET /health is public by design: it says only that the API answers, so uptime checks need no key.');
  addPublic('/openapi.json', 'GET /openapi.json is public by design: it describes the routes and their schemas, which docs/reference/http-api.md publishes anyway, and holds no data.');
  // The dashboard's page and assets: public like /health, since a browser cannot send a key for a page it
  // navigates to. The page asks for a key and sends it with every API call, which go through the authorizer.
  for (const path of Object.values(DASHBOARD_PATHS)) {
    addPublic(path, 'The dashboard page and its script and styles are static and hold no data; the page asks for an API key and sends it with every API call.');
  }
}
