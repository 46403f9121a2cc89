/** The library's error for a daemon it could not start or reach after starting one. */

/** Auto-start failed: the daemon did not start, refused to, or did not listen in time; the message is one line. */
export class AutostartError extends Error {
  override readonly name: string = 'AutostartError';
}
