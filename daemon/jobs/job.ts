/**
 * One background job: its identity, its place in the status machine
 * `running → stopping → completed | killed | failed`, its output streams and its reader's cursor.
 */
import type { LimitReport } from '../../protocol/limits.js';
import type { JobStdin } from './job-stdin.js';
import type { JobSnapshot, JobStatus, SandboxReport } from '../../protocol/types.js';
import type { JobStream, StreamName } from './job-streams.js';
import { settlementOf, type JobOutcome } from './settlement.js';
import type { ReadCursor } from './stream-read.js';

/** What a job is from its creation on. */
export interface JobIdentity {
  id: string;
  /** The command. */
  label: string;
  ownerSession: string;
  startedAt: Date;
  /** Where each stream's log file lives (it may be gone: passed the cap, or deleted). */
  logPaths: Record<StreamName, string>;
}

/** One background job of the table. */
export class Job {
  status: JobStatus = 'running';
  detail: string | undefined;
  /** The process group leader; 0 until spawned (and forever when the spawn failed). */
  pid = 0;
  /** The open stdin of a job started with `keepStdinOpen`. */
  stdin: JobStdin | undefined;
  /** Whether the job was started with `keepStdinOpen` (journaled: its stdin does not survive a restart). */
  keptStdinOpen = false;
  /**
   * True while a `shell/run` with `yieldMs` has not yielded yet: the job is its run's, hidden from
   * the job methods, and a settlement then is the run's answer, not a job notice (docs/reconnect.md).
   */
  held = false;
  /**
   * Left running by a `daemon/shutdown { keepJobs }` (journaled): the next daemon adopts it
   * instead of failing it as after a crash.
   */
  kept = false;
  /**
   * The `requestKey` of the keyed `shell/start` that created the job and the fingerprint of its
   * params (journaled), so a restarted daemon still answers its repeat with this job (docs/reconnect.md).
   */
  requestKey: { key: string; fingerprint: string } | undefined;
  /**
   * Set while a running job's output flows through pipes the daemon reads: stops reading them and
   * returns a copy of each descriptor, for an upgrade in place (daemon/jobs/job-pipes.ts).
   */
  detachPipes: (() => Array<{ stream: 'stdout' | 'stderr'; fd: number }> | string) | undefined;
  /** Stops following an adopted job's process group (set while a restarted daemon follows it). */
  unfollow: (() => void) | undefined;
  /** Whether the job was brought back from the journal by a restarted daemon. */
  restored = false;
  /** `/proc` start time of `pid`, so a restarted daemon never kills a reused pid. */
  procStartTime: number | undefined;
  exitCode: number | null = null;
  signal: string | null = null;
  finishedAt: Date | undefined;
  /** Whether some connection received this job's settlement. */
  reported = false;
  sandbox: SandboxReport | undefined;
  /** What its resource limits did to it (docs/limits.md): set when it settles. */
  limitReport: LimitReport = {};
  /** The consuming reader's position. */
  cursor: ReadCursor = { stdout: 0, stderr: 0 };
  /** Kills the process tree and resolves once it is gone; set once the process runs. */
  killTree: ((graceMs: number) => Promise<void>) | undefined;
  /**
   * Once settled with processes of its group still alive (its leftovers): kills them and resolves
   * true once they are gone, false when none was left.
   */
  killLeftovers: ((graceMs: number) => Promise<boolean>) | undefined;
  /** Resolves when the job has settled. */
  readonly settled: Promise<void>;
  private markSettled: () => void = () => {};

  constructor(
    readonly identity: JobIdentity,
    readonly streams: Record<StreamName, JobStream>,
  ) {
    this.settled = new Promise((resolve) => (this.markSettled = resolve));
  }

  /** The job id, `bash-<n>`. */
  get id(): string {
    return this.identity.id;
  }

  /** The session that owns the job. */
  get ownerSession(): string {
    return this.identity.ownerSession;
  }

  /** True once the job reached `completed`, `killed` or `failed`. */
  get isSettled(): boolean {
    return (
      this.status === 'completed' || this.status === 'killed' || this.status === 'failed' || this.status === 'lost'
    );
  }

  /** True while the job holds a process (running or being stopped). */
  get isLive(): boolean {
    return !this.isSettled;
  }

  /** Marks a kill as requested: `running → stopping`. */
  markStopping(): void {
    if (this.status === 'running') this.status = 'stopping';
  }

  /** True once a kill was requested (the job is stopping or was stopped by execd). */
  get killRequested(): boolean {
    return this.status === 'stopping';
  }

  /** Settles the job once; later calls change nothing and return false. */
  settle(outcome: JobOutcome, finishedAt = new Date()): boolean {
    if (this.isSettled) return false;
    const { status, detail } = settlementOf(outcome);
    this.status = status;
    this.detail = detail;
    if (outcome.kind === 'exit') {
      this.exitCode = outcome.exitCode;
      this.signal = outcome.signal;
    }
    if (outcome.kind === 'runner-failed') {
      this.sandbox = { ...(this.sandbox ?? { mode: 'danger-full-access', denied: false }), runnerFailed: true };
    }
    this.finishedAt = finishedAt;
    this.killTree = undefined;
    this.markSettled();
    return true;
  }

  /** Resolves `settled` for a job whose settled state was restored rather than reached. */
  resolveIfSettled(): void {
    if (this.isSettled) this.markSettled();
  }

  /** The job as the protocol reports it. */
  snapshot(): JobSnapshot {
    const snapshot: JobSnapshot = {
      id: this.id,
      kind: 'bash',
      label: this.identity.label,
      ownerSession: this.ownerSession,
      status: this.status,
      pid: this.pid,
      exitCode: this.exitCode,
      signal: this.signal,
      startedAt: this.identity.startedAt.toISOString(),
      reported: this.reported,
      stdoutBytes: this.streams.stdout.totalBytes,
      stderrBytes: this.streams.stderr.totalBytes,
    };
    const { stdout, stderr } = this.streams;
    if (stdout.logPath !== undefined) snapshot.stdoutPath = stdout.logPath;
    if (stderr.logPath !== undefined) snapshot.stderrPath = stderr.logPath;
    if (this.detail !== undefined) snapshot.detail = this.detail;
    if (this.finishedAt) snapshot.finishedAt = this.finishedAt.toISOString();
    if (this.sandbox) snapshot.sandbox = this.sandbox;
    Object.assign(snapshot, this.limitReport);
    return snapshot;
  }
}
