/**
 * What the traffic a local runtime has served would have cost deployed, as its meter counted and priced it
 * (infra/local/aws/meter.ts): `GET /v1/stats` shows it where the server meters itself (`npm start`).
 */
export interface DeployedCost {
  sinceMs: number;
  /** The date and region of the prices (infra/local/aws/prices.ts). */
  pricesAsOf: string;
  region: string;
  /** Every unit counted, all functions together, by the meter's names (`lambdaRequests`, `dynamoDbWriteUnits`, ...). */
  units: Readonly<Record<string, number>>;
  /** The traffic's dollars, by service (`lambda`, `dynamodb`, ...). */
  trafficDollars: Readonly<Record<string, number>>;
  /** The traffic's dollars, by function, and `gateway` for API Gateway's own. */
  trafficDollarsByFunction: Readonly<Record<string, number>>;
  /** What the stack holds whatever the traffic (the alarms, the timer queue's polling), by service, a month. */
  fixedDollarsPerMonth: Readonly<Record<string, number>>;
  /** The traffic's dollars and the holdings' over the time since `sinceMs`. */
  totalDollars: number;
}
