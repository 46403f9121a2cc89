/**
 * The thread a client's regular expression runs on (`job/wait` `until.output`): a pattern that
 * backtracks for minutes (`^(a+)+$` on forty a's and an x) stalls this thread, not the daemon's
 * event loop, and the checker ends the thread when the check passes its time bound.
 */
import { parentPort } from 'node:worker_threads';

/** One check: does `pattern` match somewhere in `text`? */
export interface RegexCheck {
  id: number;
  pattern: string;
  text: string;
}

/** Its answer. */
export interface RegexAnswer {
  id: number;
  matched: boolean;
}

parentPort?.on('message', ({ id, pattern, text }: RegexCheck) => {
  const answer: RegexAnswer = { id, matched: new RegExp(pattern, 'm').test(text) };
  parentPort?.postMessage(answer);
});
