/** Polling helpers: tests wait for a condition, never for a fixed time. */

/** Polls `check` until it returns a truthy value, or fails after `timeoutMs` naming `what`. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  what: string,
  { timeoutMs = 15_000, intervalMs = 20 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
