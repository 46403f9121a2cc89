/**
 * The daemon's job table (docs/jobs.md): ids that are never reused, ownership by session, the
 * journal that lets a restarted daemon find every job again, and the bound on settled jobs
 * (`maxSettledJobs`, `settledJobRetentionMs`): past it the oldest settled jobs are released with
 * their log files, so the table, the journal and `daemon/status` stay small however many jobs ran.
 */
import { rm } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { ExecdError } from '../../protocol/errors.js';
import type { Logger } from '../log/logger.js';
import { formatJobId } from './ids.js';
import type { Job } from './job.js';
import { fromRecord, toRecord } from './job-record.js';
import { JobJournal, loadJournal } from './journal.js';
import { StdinPool } from './stdin-pool.js';
import { adoptionOf, growingStreams } from './adopt.js';
import { settledToRelease, type SettledBounds } from './retention.js';
import { untrustedJobRecord } from './journal-trust.js';

/** Bounds of the retention timer's period. */
const MIN_PRUNE_PERIOD_MS = 100;
const MAX_PRUNE_PERIOD_MS = 60_000;

/** The table of background jobs, journaled as it changes. */
export class JobTable {
  private readonly jobs = new Map<string, Job>();
  private nextNumber = 1;
  private readonly journal: JobJournal;
  private pruneTimer: NodeJS.Timeout | undefined;
  /** The open stdins of every job, bounded together by `maxTotalStdinBytes`. */
  readonly stdinPool = new StdinPool();

  constructor(
    journalPath: string,
    /** Called once per job when it settles, after its settlement is journaled. */
    private readonly onSettled: (job: Job) => void,
    private readonly log: Logger,
    /** The settled-job bounds, read at each use so that `config/set` applies. */
    private readonly bounds: () => SettledBounds,
    /** The spill directory: a released job's log files are deleted only when they lie inside it. */
    private readonly logRoot: string,
  ) {
    this.journal = new JobJournal(
      journalPath,
      {
        state: () => ({ nextNumber: this.nextNumber, jobs: [...this.jobs.values()].map(toRecord) }),
        jobCount: () => this.jobs.size,
      },
      log,
    );
  }

  /**
   * Loads the journal of a previous daemon; ids continue. Jobs it left running after a crash
   * become `failed` (the daemon that ran them is gone) and are returned as `interrupted`, so their
   * process groups can be killed. Jobs a `keepJobs` shutdown left running are `adopted`: still
   * running, read from their growing logs, settled and announced like any job once followed.
   */
  restore(windowBytes: number): { interrupted: Job[]; adopted: Job[] } {
    const state = loadJournal(this.journal.path);
    if (state.readError !== undefined)
      this.log.warn({ code: state.readError }, 'job journal unreadable; starting with an empty job table');
    for (const bad of state.skipped)
      this.log.warn({ line: bad.line, type: bad.type, reason: bad.reason }, 'job journal: skipped a bad record');
    this.nextNumber = Math.max(this.nextNumber, state.nextNumber);
    const interrupted: Job[] = [];
    const adopted: Job[] = [];
    for (const record of state.jobs) {
      // A record that names a file outside the spill directory or an impossible pid is dropped
      // whole: nothing reads, deletes or signals what it names.
      const untrusted = untrustedJobRecord(record, this.logRoot);
      if (untrusted !== undefined) {
        this.log.warn(
          { jobId: record.id, reason: untrusted },
          'job journal: dropped a record that failed verification',
        );
        continue;
      }
      const job = fromRecord(record, windowBytes);
      this.jobs.set(job.id, job);
      if (!job.kept || !job.isLive) {
        if (job.settle({ kind: 'daemon-restarted' })) interrupted.push(job);
        continue;
      }
      job.kept = false;
      const adoption = adoptionOf(job);
      if (adoption === 'adopt') {
        // A kill asked of the earlier daemon is asked again of this one.
        job.status = 'running';
        growingStreams(job, windowBytes);
        this.follow(job);
        adopted.push(job);
      } else if (adoption === 'ended') job.settle({ kind: 'adopted-ended', killRequested: false });
      // A reused pid is someone else's: failed, and never killed.
      else job.settle({ kind: 'daemon-restarted' });
    }
    this.pruneSettled();
    // Rewritten from what was kept: skipped lines and released jobs leave the file.
    this.journal.compact();
    this.schedulePrune();
    return { interrupted, adopted };
  }

  /**
   * Releases settled jobs past the bounds — older than `settledJobRetentionMs`, then the oldest
   * past `maxSettledJobs` — and deletes their log files. Returns how many were released.
   */
  pruneSettled(now = Date.now()): number {
    const settled = [...this.jobs.values()]
      .filter((job) => job.isSettled)
      .map((job) => ({ id: job.id, finishedAtMs: job.finishedAt?.getTime() ?? job.identity.startedAt.getTime() }));
    const doomed = settledToRelease(settled, now, this.bounds());
    for (const id of doomed) {
      const job = this.jobs.get(id)!;
      this.forget(job);
      const { logPaths } = job.identity;
      // A path from a journal is never trusted to name a file outside the spill directory.
      const ours = [logPaths.stdout, logPaths.stderr].filter((path) =>
        resolve(path).startsWith(resolve(this.logRoot) + sep),
      );
      for (const path of ours)
        rm(path, { force: true }).catch((error: NodeJS.ErrnoException) =>
          this.log.warn({ jobId: id, code: error.code }, 'could not delete a released job log'),
        );
    }
    if (doomed.length > 0) this.log.info({ released: doomed.length }, 'settled jobs released past their bound');
    return doomed.length;
  }

  /** Checks the age bound a few times per `settledJobRetentionMs` (at most every minute). */
  private schedulePrune(): void {
    const period = Math.min(
      MAX_PRUNE_PERIOD_MS,
      Math.max(MIN_PRUNE_PERIOD_MS, this.bounds().settledJobRetentionMs / 4),
    );
    this.pruneTimer = setTimeout(() => {
      this.pruneSettled();
      this.schedulePrune();
    }, period);
    this.pruneTimer.unref();
  }

  /** A fresh id, `bash-<n>`; never handed out twice. */
  allocateId(): string {
    return formatJobId(this.nextNumber++);
  }

  /** Adds a new job; its settlement is journaled and announced when it happens. */
  add(job: Job): void {
    this.jobs.set(job.id, job);
    this.record(job);
    this.follow(job);
  }

  /** Journals and announces a job's settlement when it happens. */
  private follow(job: Job): void {
    job.settled
      .then(() => {
        // A held job settled before its run yielded: the run answers, and forgets it.
        if (this.jobs.get(job.id) !== job || job.held) return;
        this.record(job);
        this.onSettled(job);
        this.pruneSettled();
      })
      .catch((error: unknown) => this.log.error({ jobId: job.id, err: error }, 'job settlement bookkeeping failed'));
  }

  /** Journals a job's current state (after its pid, `reported` or settlement changed). */
  record(job: Job): void {
    this.journal.append({ t: 'job', job: toRecord(job) });
  }

  /** Journals a job's read cursor after a consuming read. */
  recordCursor(job: Job): void {
    this.journal.append({ t: 'cursor', id: job.id, ...job.cursor });
  }

  /** The job, or undefined. */
  get(jobId: string): Job | undefined {
    return this.jobs.get(jobId);
  }

  /** The job if `sessionId` owns it: JOB_NOT_FOUND for an unknown id, FORBIDDEN for another session's. */
  require(jobId: string, sessionId: string): Job | ExecdError {
    const job = this.jobs.get(jobId);
    // A run that has not yielded is not a job yet for anyone.
    if (!job || job.held) return new ExecdError('JOB_NOT_FOUND', `no job ${jobId}`);
    if (job.ownerSession !== sessionId) {
      return new ExecdError('FORBIDDEN', `job ${jobId} belongs to another session, not to ${sessionId}`);
    }
    return job;
  }

  /** Every job a client may see (none held by a run that has not yielded), or one session's. */
  visible(sessionId?: string): Job[] {
    return this.list(sessionId).filter((job) => !job.held);
  }

  /** Every job, or one session's, in id order. */
  list(sessionId?: string): Job[] {
    const all = [...this.jobs.values()];
    return sessionId === undefined ? all : all.filter((job) => job.ownerSession === sessionId);
  }

  /** Jobs that still hold a process (running or stopping), of one session or all. */
  live(sessionId?: string): Job[] {
    return this.list(sessionId).filter((job) => job.isLive);
  }

  /** Forgets a job (its files are its owner's to delete). */
  forget(job: Job): void {
    if (this.jobs.get(job.id) !== job) return;
    this.jobs.delete(job.id);
    this.journal.append({ t: 'forget', id: job.id });
  }

  /** Writes the final journal and closes it. */
  close(): void {
    clearTimeout(this.pruneTimer);
    this.journal.close();
  }
}
