/**
 * What AWS charges for each unit the queue uses, in one place: the meter (./meter.ts) and the bench price what they
 * count with these, and no other file of the repository states a price (docs quote what these gave, and say so).
 *
 * List prices of us-east-1 as of PRICES_AS_OF, on-demand, without free tiers, volume tiers past the first, or
 * savings plans: what a new stage pays for its first units. Each price names the pricing page it comes from and how
 * it was checked on that date: `confirmed` quotes where the figure was read (the page itself, or a page quoting it,
 * found by a search of stored web pages; no live AWS page could be opened), `fromMemory` says it was not found.
 * Check the `fromMemory` ones first when the prices are next reviewed.
 */

export const PRICES_AS_OF = '2026-11-29';
export const PRICE_REGION = 'us-east-1';

export interface Price {
  dollars: number;
  /** How many of `unit` the dollars buy. */
  per: number;
  unit: string;
  page: string;
  checked: { confirmed: string } | { fromMemory: string };
}

const DYNAMODB_ON_DEMAND = 'https://aws.amazon.com/dynamodb/pricing/on-demand/';
const LAMBDA = 'https://aws.amazon.com/lambda/pricing/';
const API_GATEWAY = 'https://aws.amazon.com/api-gateway/pricing/';
const EVENTBRIDGE = 'https://aws.amazon.com/eventbridge/pricing/';
const SQS = 'https://aws.amazon.com/sqs/pricing/';
const SYSTEMS_MANAGER = 'https://aws.amazon.com/systems-manager/pricing/';
const CLOUDWATCH = 'https://aws.amazon.com/cloudwatch/pricing/';

export const PRICES = {
  dynamoDbWriteRequestUnit: {
    dollars: 0.625,
    per: 1_000_000,
    unit: 'write request unit (on-demand)',
    page: DYNAMODB_ON_DEMAND,
    checked: { confirmed: 'after the cut of 1 November 2024 (half the $1.25 before), as airbyte.com/data-engineering-resources/dynamodb-pricing and jusdb.com quote the page' },
  },
  dynamoDbReadRequestUnit: {
    dollars: 0.125,
    per: 1_000_000,
    unit: 'read request unit (on-demand)',
    page: DYNAMODB_ON_DEMAND,
    checked: { confirmed: 'as for write request units' },
  },
  dynamoDbStorage: {
    dollars: 0.25,
    per: 1,
    unit: 'GB-month of table and index storage (first 25 GB a month free)',
    page: DYNAMODB_ON_DEMAND,
    checked: { fromMemory: 'not found in the stored pages' },
  },
  dynamoDbStreamsReadFromLambda: {
    dollars: 0,
    per: 1,
    unit: 'GetRecords call made by a Lambda event source mapping (the waker reads the table stream so)',
    page: DYNAMODB_ON_DEMAND,
    checked: { confirmed: 'docs.aws.amazon.com/amazondynamodb/latest/developerguide/CostOptimization_StreamsUsage.html: read requests made by Lambda-based consumers are free; an idle stream is not charged' },
  },
  lambdaRequest: {
    dollars: 0.2,
    per: 1_000_000,
    unit: 'Lambda request (invocation)',
    page: LAMBDA,
    checked: { confirmed: 'quoted with both duration prices by cloudchipr.com/blog/aws-lambda-pricing and kodekloud.com notes' },
  },
  lambdaArm64Duration: {
    dollars: 0.0000133334,
    per: 1,
    unit: 'GB-second on arm64 (first 7.5 billion GB-s a month)',
    page: LAMBDA,
    checked: { confirmed: 'cloudchipr.com/blog/aws-lambda-pricing, "ARM Pricing: First 7.5 Billion GB-seconds per month: $0.0000133334"' },
  },
  lambdaX86Duration: {
    dollars: 0.0000166667,
    per: 1,
    unit: 'GB-second on x86 (first 6 billion GB-s a month)',
    page: LAMBDA,
    checked: { confirmed: 'cloudchipr.com/blog/aws-lambda-pricing, as for arm64' },
  },
  httpApiRequest: {
    dollars: 1,
    per: 1_000_000,
    unit: 'HTTP API request (first 300 million a month), metered in 512 KB increments',
    page: API_GATEWAY,
    checked: { confirmed: 'the AWS whitepaper "Best Practices for Designing Amazon API Gateway Private APIs", cost optimization: "$1.00 (per million)", "HTTP APIs are metered in 512 KB increments"' },
  },
  eventBridgeCustomEvent: {
    dollars: 1,
    per: 1_000_000,
    unit: 'custom event put on a bus, each 64 KB chunk of its payload one event',
    page: EVENTBRIDGE,
    checked: { confirmed: 'cloudburn.io/blog/amazon-eventbridge-pricing ("$1.00 per million events ingested", "the 64 KB chunking rule")' },
  },
  eventBridgeScheduledRule: {
    dollars: 0,
    per: 1,
    unit: "event of a scheduled rule (the stack's rate(1 minute) ticks)",
    page: EVENTBRIDGE,
    checked: { fromMemory: 'scheduled events are not custom events; not found in the stored pages' },
  },
  sqsStandardRequest: {
    dollars: 0.4,
    per: 1_000_000,
    unit: 'SQS standard-queue request (first 100 billion a month), each 64 KB chunk of its payload one request',
    page: SQS,
    checked: { confirmed: 'unanswered.io/guide/aws-sqs-pricing-and-cost-optimization and factualminds.com: "$0.40 per million", "each 64 KB chunk of a message is billed as one request", empty receives billed' },
  },
  ssmStandardParameter: {
    dollars: 0,
    per: 1,
    unit: 'Parameter Store standard parameter-month, a SecureString under the AWS managed key aws/ssm included (the callback token parameter)',
    page: SYSTEMS_MANAGER,
    checked: {
      confirmed:
        'docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html, standard tier: "Cost: No additional charge"; the PutParameter API reference: "Standard parameters are offered at no additional cost"',
    },
  },
  ssmStandardParameterApiCall: {
    dollars: 0,
    per: 1,
    unit: 'GetParameter or PutParameter call at the default (standard) throughput',
    page: SYSTEMS_MANAGER,
    checked: {
      confirmed:
        'docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-throughput.html: applications within the default throughput "can typically use this default setting without additional cost"; higher throughput is charged',
    },
  },
  cloudWatchCustomMetric: {
    dollars: 0.3,
    per: 1,
    unit: 'custom metric-month (first 10 000 metrics), prorated by the hours a metric is sent in',
    page: CLOUDWATCH,
    checked: { confirmed: 'cal53.calculator.city/cloudwatch-custom-metrics-calculator: "$0.30 per metric per month for the first 10,000 metrics"; the hourly proration from memory' },
  },
  cloudWatchAlarmMetric: {
    dollars: 0.1,
    per: 1,
    unit: 'standard-resolution alarm metric-month (an alarm on metric math counts each metric it reads)',
    page: CLOUDWATCH,
    checked: { confirmed: 'the $0.10 a standard alarm-month in c3x.dev/resources/aws/aws_cloudwatch_metric_alarm and the page\'s free tier of "10 Alarm metrics"; the count per metric of metric math from memory' },
  },
  cloudWatchLogsIngestion: {
    dollars: 0.5,
    per: 1,
    unit: 'GB of log data ingested (standard log class)',
    page: CLOUDWATCH,
    checked: { confirmed: 'c3x.dev/blog/cloudwatch-logs-cost-optimization and hykell.com, us-east-1' },
  },
  cloudWatchLogsStorage: {
    dollars: 0.03,
    per: 1,
    unit: 'GB-month of log data kept (charged compressed)',
    page: CLOUDWATCH,
    checked: { confirmed: 'as for ingestion; "charged compressed" from memory' },
  },
} as const satisfies Record<string, Price>;

export type PriceName = keyof typeof PRICES;

/** Dollars for `units` of `name`. */
export function priced(name: PriceName, units: number): number {
  const { dollars, per } = PRICES[name];
  return (units * dollars) / per;
}

/** What each request or event is billed by beyond its count: sizes rounded up to these, on the same pages as the prices. */
export const BILLING_INCREMENTS = {
  httpApiRequestBytes: 512 * 1024,
  eventBridgeEventBytes: 64 * 1024,
  sqsRequestBytes: 64 * 1024,
  /**
   * A Lambda asynchronous invoke bills one request up to this payload and one more per 64 KB beyond (since the
   * payload limit went to 1 MB in October 2025). From memory: the stored pages tell of the new limit, not of its billing.
   */
  lambdaAsyncIncludedBytes: 256 * 1024,
  lambdaAsyncChunkBytes: 64 * 1024,
  /** Lambda bills duration in whole milliseconds, rounded up (infra/local/aws/invocation-report.ts). */
  lambdaDurationMs: 1,
} as const;

/** AWS prorates monthly charges (metrics, alarms) over 730 hours. */
export const HOURS_PER_MONTH = 730;

/** Log and duration sizes are binary: a GB is 2^30 bytes, as AWS bills them. */
export const BYTES_PER_GB = 2 ** 30;
export const MB_PER_GB = 1024;
