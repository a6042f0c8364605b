/**
 * The client writes out the types of the api's answers instead of importing the server's zod schemas; these
 * checks (run by `tsc`, which type-checks the tests) hold each method's answer to the schema the OpenAPI
 * document describes its route's answer with (functions/api/operations.ts), so the two cannot drift apart.
 */
import { expectTypeOf, test } from 'vitest';
import type { z } from 'zod';
import type { OPERATIONS, RouteName } from '../../../../functions/api/operations.js';
import type { QueueClient } from '../../../../lib/client/index.js';

type OperationOf<R extends RouteName> = Extract<(typeof OPERATIONS)[number], { route: R }>;
/** The body of a route's success answers as documented, whichever of its statuses it answers with. */
type Documented<R extends RouteName> = { [S in keyof OperationOf<R>['responses']]: z.output<OperationOf<R>['responses'][S]> }[keyof OperationOf<R>['responses']];
type Answer<M extends keyof QueueClient> = Awaited<ReturnType<QueueClient[M]>>;

/** What the client gives back for each route, in the route's own shape (the list methods unwrap their list). */
interface ClientAnswers {
  health: Answer<'health'>;
  openApi: Answer<'openApi'>;
  listJobTypes: { job_types: Answer<'listTypes'> };
  getJobType: Answer<'getType'>;
  putJobType: Answer<'defineType'>;
  pauseJobType: Answer<'pause'>;
  resumeJobType: Answer<'resume'>;
  stats: Answer<'stats'>;
  metrics: Answer<'metrics'>;
  enqueueWithServerId: Answer<'enqueue'>;
  listJobs: Answer<'list'>;
  enqueueBatch: Answer<'enqueueBatch'>;
  enqueueWithId: Answer<'enqueue'>;
  getJob: Answer<'get'>;
  callback: Answer<'complete'> & Answer<'fail'>;
  cancel: Answer<'cancel'>;
  changeJob: Answer<'change'>;
  heartbeat: Answer<'heartbeat'> & Answer<'reportProgress'>;
  replay: Answer<'replay'>;
  callbackByCorrelationKey: Answer<'completeByKey'> & Answer<'failByKey'>;
  jobberQueue: Answer<'jobberQueue'>;
  createKey: Answer<'createKey'>;
  listKeys: { keys: Answer<'listKeys'> };
  revokeKey: Answer<'revokeKey'>;
  listSchedules: Answer<'listSchedules'>;
  putSchedule: Answer<'defineSchedule'>;
  getSchedule: Answer<'getSchedule'>;
  deleteSchedule: Answer<'deleteSchedule'>;
  pauseSchedule: Answer<'pauseSchedule'>;
  resumeSchedule: Answer<'resumeSchedule'>;
  startBulk: Answer<'startBulk'>;
  getOperation: Answer<'getOperation'>;
}

test('every route the api serves has the answer type of a client method', () => {
  expectTypeOf<keyof ClientAnswers>().toEqualTypeOf<RouteName>();
});

test('the client types the answers about jobs as the document describes them', () => {
  expectTypeOf<ClientAnswers['enqueueWithServerId']>().toEqualTypeOf<Documented<'enqueueWithServerId'>>();
  expectTypeOf<ClientAnswers['enqueueWithId']>().toEqualTypeOf<Documented<'enqueueWithId'>>();
  expectTypeOf<ClientAnswers['enqueueBatch']>().toEqualTypeOf<Documented<'enqueueBatch'>>();
  expectTypeOf<ClientAnswers['listJobs']>().toEqualTypeOf<Documented<'listJobs'>>();
  expectTypeOf<ClientAnswers['getJob']>().toEqualTypeOf<Documented<'getJob'>>();
  expectTypeOf<ClientAnswers['callback']>().toEqualTypeOf<Documented<'callback'>>();
  expectTypeOf<ClientAnswers['cancel']>().toEqualTypeOf<Documented<'cancel'>>();
  expectTypeOf<ClientAnswers['changeJob']>().toEqualTypeOf<Documented<'changeJob'>>();
  expectTypeOf<ClientAnswers['heartbeat']>().toEqualTypeOf<Documented<'heartbeat'>>();
  expectTypeOf<ClientAnswers['replay']>().toEqualTypeOf<Documented<'replay'>>();
  expectTypeOf<ClientAnswers['callbackByCorrelationKey']>().toEqualTypeOf<Documented<'callbackByCorrelationKey'>>();
  expectTypeOf<ClientAnswers['jobberQueue']>().toEqualTypeOf<Documented<'jobberQueue'>>();
  expectTypeOf<ClientAnswers['startBulk']>().toEqualTypeOf<Documented<'startBulk'>>();
  expectTypeOf<ClientAnswers['getOperation']>().toEqualTypeOf<Documented<'getOperation'>>();
});

test('the client types the answers about job types, stats and metrics as the document describes them', () => {
  expectTypeOf<ClientAnswers['listJobTypes']>().toEqualTypeOf<Documented<'listJobTypes'>>();
  expectTypeOf<ClientAnswers['getJobType']>().toEqualTypeOf<Documented<'getJobType'>>();
  expectTypeOf<ClientAnswers['putJobType']>().toEqualTypeOf<Documented<'putJobType'>>();
  expectTypeOf<ClientAnswers['pauseJobType']>().toEqualTypeOf<Documented<'pauseJobType'>>();
  expectTypeOf<ClientAnswers['resumeJobType']>().toEqualTypeOf<Documented<'resumeJobType'>>();
  expectTypeOf<ClientAnswers['stats']>().toEqualTypeOf<Documented<'stats'>>();
  expectTypeOf<ClientAnswers['metrics']>().toEqualTypeOf<Documented<'metrics'>>();
});

test('the client types the answers about schedules as the document describes them', () => {
  expectTypeOf<ClientAnswers['listSchedules']>().toEqualTypeOf<Documented<'listSchedules'>>();
  expectTypeOf<ClientAnswers['putSchedule']>().toEqualTypeOf<Documented<'putSchedule'>>();
  expectTypeOf<ClientAnswers['getSchedule']>().toEqualTypeOf<Documented<'getSchedule'>>();
  expectTypeOf<ClientAnswers['deleteSchedule']>().toEqualTypeOf<Documented<'deleteSchedule'>>();
  expectTypeOf<ClientAnswers['pauseSchedule']>().toEqualTypeOf<Documented<'pauseSchedule'>>();
  expectTypeOf<ClientAnswers['resumeSchedule']>().toEqualTypeOf<Documented<'resumeSchedule'>>();
});

test('the client types the answers about keys, health and the document itself as the document describes them', () => {
  expectTypeOf<ClientAnswers['createKey']>().toEqualTypeOf<Documented<'createKey'>>();
  expectTypeOf<ClientAnswers['listKeys']>().toEqualTypeOf<Documented<'listKeys'>>();
  expectTypeOf<ClientAnswers['revokeKey']>().toEqualTypeOf<Documented<'revokeKey'>>();
  expectTypeOf<ClientAnswers['health']>().toEqualTypeOf<Documented<'health'>>();
  expectTypeOf<ClientAnswers['openApi']>().toEqualTypeOf<Documented<'openApi'>>();
});
