/** How the cost scenarios' tables scale what a window counted: per job and per million jobs, or per hour and per month. */
import { expect, test } from 'vitest';
import { costTables, type CostScenarioResult } from '../../../bench/cost-scenarios.js';
import { noUsage, SERVICES, type Service } from '../../../infra/local/aws/billing.js';

const table = (headers: string[], rows: string[][]): string => [headers, ...rows].map((row) => row.join(' | ')).join('\n');
const dollars = (lambda: number): Record<Service, number> => ({ ...(Object.fromEntries(SERVICES.map((service) => [service, 0])) as Record<Service, number>), lambda });

test('an arrival window prints units per job and the window dollars scaled to a million jobs', () => {
  const result: CostScenarioResult = {
    scenario: 'arrival',
    description: 'arrivals',
    windowMs: 60_000,
    jobs: 500,
    usage: { ...noUsage(), lambdaRequests: 1_000 },
    usageBySource: { poller: { ...noUsage(), dynamoDbCalls: 1_500, dynamoDbReadUnits: 100, dynamoDbUnreportedReadUnits: 150 } },
    customMetrics: 0,
    trafficDollars: dollars(0.001),
    fixedDollarsPerMonth: dollars(0),
  };
  const printed = costTables([result], table);
  expect(printed).toContain('lambdaRequests | 2.000');
  expect(printed).toContain('lambda | 2.0000 | 0.00');
  // By function, read units counted whether DynamoDB Local reported them or not.
  expect(printed).toContain('poller | 3.000 | 0.000 | 0.500 | 0.000');
});

test('an idle window prints units per hour and the window dollars scaled to a month of 730 hours', () => {
  const result: CostScenarioResult = {
    scenario: 'idle',
    description: 'idle',
    windowMs: 3_600_000,
    jobs: 0,
    usage: { ...noUsage(), dynamoDbCalls: 700 },
    usageBySource: {},
    customMetrics: 0,
    trafficDollars: dollars(0.001),
    fixedDollarsPerMonth: dollars(0.5),
  };
  const printed = costTables([result], table);
  expect(printed).toContain('dynamoDbCalls | 700.000');
  expect(printed).toContain('lambda | 0.7300 | 0.50');
  expect(printed).toContain('all in: $1.23 a month');
});
