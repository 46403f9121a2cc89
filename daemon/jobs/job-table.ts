/**
 * The daemon's job table (SPEC §1.6): ids that are never reused, ownership by session, and the
 * journal that lets a restarted daemon find every job again.
 */
import { ExecdError } from '../../protocol/errors.js';
import type { Logger } from '../logger.js';
import { formatJobId } from './ids.js';
import type { Job } from './job.js';
import { fromRecord, toRecord } from './job-record.js';
import { JobJournal, loadJournal } from './journal.js';

/** The table of background jobs, journaled as it changes. */
export class JobTable {
  private readonly jobs = new Map<string, Job>();
  private nextNumber = 1;
  private readonly journal: JobJournal;

  constructor(
    journalPath: string,
    /** Called once per job when it settles, after its settlement is journaled. */
    private readonly onSettled: (job: Job) => void,
    private readonly log: Logger,
  ) {
    this.journal = new JobJournal(journalPath, {
      state: () => ({ nextNumber: this.nextNumber, jobs: [...this.jobs.values()].map(toRecord) }),
      jobCount: () => this.jobs.size,
    });
  }

  /**
   * Loads the journal of a previous daemon. Jobs it left running become `failed` (the daemon that
   * ran them is gone) and are returned, so their process groups can be killed; ids continue.
   */
  restore(windowBytes: number): Job[] {
    const state = loadJournal(this.journal.path);
    this.nextNumber = Math.max(this.nextNumber, state.nextNumber);
    const interrupted: Job[] = [];
    for (const record of state.jobs) {
      const job = fromRecord(record, windowBytes);
      if (job.settle({ kind: 'daemon-restarted' })) interrupted.push(job);
      this.jobs.set(job.id, job);
    }
    this.journal.compact();
    return interrupted;
  }

  /** A fresh id, `bash-<n>`; never handed out twice. */
  allocateId(): string {
    return formatJobId(this.nextNumber++);
  }

  /** Adds a new job; its settlement is journaled and announced when it happens. */
  add(job: Job): void {
    this.jobs.set(job.id, job);
    this.record(job);
    job.settled
      .then(() => {
        if (this.jobs.get(job.id) !== job) return;
        this.record(job);
        this.onSettled(job);
      })
      // E.g. the journal cannot be written (full disk): the job stays settled in memory.
      .catch((error: unknown) => this.log.error({ jobId: job.id, err: error }, 'journaling a settled job failed'));
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
    if (!job) return new ExecdError('JOB_NOT_FOUND', `no job ${jobId}`);
    if (job.ownerSession !== sessionId) {
      return new ExecdError('FORBIDDEN', `job ${jobId} belongs to another session, not to ${sessionId}`);
    }
    return job;
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
    this.journal.close();
  }
}
