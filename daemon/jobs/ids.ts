/** Job ids: `bash-<n>`, `n` increasing and never reused, also across daemon restarts. */

const PREFIX = 'bash-';

/** The id of the job numbered `n`. */
export function formatJobId(n: number): string {
  return `${PREFIX}${n}`;
}

/** The number of a job id, or undefined when it is not one of ours. */
export function jobNumber(id: string): number | undefined {
  if (!id.startsWith(PREFIX)) return undefined;
  const n = Number(id.slice(PREFIX.length));
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}
