/**
 * Request keys that outlive the daemon (docs/reconnect.md): the key of a keyed `shell/start` is journaled
 * with the job it created, so after a restart a repeat of it — a reconnecting client re-sending a
 * start whose answer the old daemon never delivered — answers that job instead of starting a
 * second one. Other keys live in memory only: their effects are either repeatable or gone with
 * the daemon (a foreground run was aborted by the shutdown).
 */
import { ShellStart } from '../../protocol/methods.js';
import type { ShellStartResult } from '../../protocol/types.js';
import type { Job } from '../jobs/job.js';
import { answerBytes, type RequestKeyStore } from './key-store.js';

/** Remembers the `shell/start` key of every restored job that has one; returns how many were offered. */
export function restoreJobKeys(store: RequestKeyStore, jobs: readonly Job[]): number {
  let restored = 0;
  for (const job of jobs) {
    if (!job.requestKey) continue;
    const answer: ShellStartResult = { jobId: job.id, pid: job.pid, startedAt: job.identity.startedAt.toISOString() };
    store.restore(job.ownerSession, job.requestKey.key, {
      method: ShellStart.method,
      fingerprint: job.requestKey.fingerprint,
      answer: Promise.resolve(answer),
      // A start answers at once: the answer is as old as the job.
      settledAt: job.identity.startedAt.getTime(),
      bytes: answerBytes(answer),
    });
    restored += 1;
  }
  return restored;
}
