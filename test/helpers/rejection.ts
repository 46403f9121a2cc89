/** The refusal of a daemon call, for tests that expect one. */
import { ExecdRpcError } from '../../client/connection.js';

/** The rejection of `promise`, which must be an ExecdRpcError (a call that succeeds fails the test). */
export async function rejection(promise: Promise<unknown>): Promise<ExecdRpcError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof ExecdRpcError)) throw new Error(`expected an ExecdRpcError, got ${String(error)}`);
  return error;
}
