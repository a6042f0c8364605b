/**
 * Whether a failed call says only that DynamoDB, or the way to it, cannot take
 * it right now: throttled, timed out, refused or reset. The same call may well
 * succeed a moment later, so a request that failed this way is answered
 * "try again" rather than as a fault. The SDK's own classification decides,
 * so it agrees with what the SDK already retried.
 */
import { isThrottlingError, isTransientError } from '@smithy/core/retry';

type SdkError = Parameters<typeof isTransientError>[0];

export function isStoreUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const sdkError = error as SdkError;
  return isThrottlingError(sdkError) || isTransientError(sdkError);
}
