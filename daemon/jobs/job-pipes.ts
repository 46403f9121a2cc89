/**
 * The output pipes of confined jobs across an upgrade in place. A confined job's stderr (bubblewrap)
 * or both its streams (Landlock's confined spawner) reach its log files through a pipe the daemon
 * reads: such a job would die of SIGPIPE with the daemon's program, so the pipes cross the exec.
 * Before it, the daemon stops reading each pipe, writes what it had read into the log file, and
 * hands over a copy of the pipe's descriptor; after it, the new program reads the pipe on,
 * appending to the same log file, so nothing is lost or doubled. A job writing meanwhile waits on
 * the full pipe (64 KiB), never loses a byte. Denials in a stderr read after the exec are not
 * scanned any more: the report keeps what was seen before.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { Job } from './job.js';
import { childProbe } from './inherited-children.js';
import type { AdoptedProbe } from './adopt.js';
import { closeFd, duplicate } from '../host/libc.js';

/** A stream of a job's output. */
export type StreamName = 'stdout' | 'stderr';

/** A pipe handed over: whose, which stream, its descriptor. */
export interface HandedPipe {
  jobId: string;
  stream: StreamName;
  fd: number;
}

/** A pipe the daemon reads, and where its chunks go (the job's collector and denial scan, or its log). */
export interface ReadPipe {
  stream: StreamName;
  pipe: Readable;
  sink: (chunk: Buffer) => void;
}

/** Stops libuv reading a pipe (a paused Node stream still fills its buffer). */
function stopReading(pipe: Readable): void {
  const handle = (pipe as unknown as { _handle?: { reading?: boolean; readStop?: () => number } })._handle;
  if (handle?.readStop === undefined) return;
  handle.reading = false;
  handle.readStop();
}

/**
 * Makes a running job's pipes detachable (set as `job.detachPipes` at its start): stops reading
 * them, collects what was read, and returns a copy of each descriptor (not close-on-exec), or why not.
 */
export function pipeDetacher(pipes: ReadPipe[]): () => Array<Omit<HandedPipe, 'jobId'>> | string {
  return () => {
    const handles = pipes.map(({ pipe }) => (pipe as unknown as { _handle?: { fd?: unknown } })._handle?.fd);
    if (!handles.every((fd): fd is number => typeof fd === 'number' && fd >= 0)) return 'a pipe has no descriptor';
    const handed: Array<{ stream: StreamName; fd: number }> = [];
    for (const [index, { stream, pipe, sink }] of pipes.entries()) {
      pipe.pause();
      pipe.removeAllListeners('data');
      // What the stream holds but has not delivered belongs to the log before the exec.
      for (let chunk = pipe.read() as Buffer | null; chunk !== null; chunk = pipe.read() as Buffer | null) sink(chunk);
      // A paused stream still reads into its buffer: libuv stops reading here, in the same turn,
      // so the next byte stays in the pipe for the new program.
      stopReading(pipe);
      const copy = duplicate(handles[index]!);
      if (typeof copy === 'string') {
        for (const made of handed) closeFd(made.fd);
        return copy;
      }
      handed.push({ stream, fd: copy });
    }
    return handed;
  };
}

/** The pipes of one adopted job, read on into its log files. */
export class HandedPipes {
  private open = 0;
  private readonly readers: Socket[] = [];
  /** Hands these pipes on at the next upgrade in place (set as the job's `detachPipes`). */
  readonly detach: () => Array<Omit<HandedPipe, 'jobId'>> | string;

  constructor(job: Job, pipes: readonly HandedPipe[]) {
    const read: ReadPipe[] = [];
    for (const { stream, fd } of pipes) {
      this.open += 1;
      const file = openSync(job.identity.logPaths[stream], 'a');
      const reader = new Socket({ fd, readable: true, writable: false });
      this.readers.push(reader);
      const sink = (chunk: Buffer) => {
        try {
          writeSync(file, chunk);
        } catch {
          // A log that cannot be written (a full disk) loses this chunk, as a live job's would.
        }
      };
      read.push({ stream, pipe: reader, sink });
      reader.on('data', sink);
      reader.on('error', () => reader.destroy());
      reader.once('close', () => {
        closeSync(file);
        this.open -= 1;
      });
    }
    this.detach = pipeDetacher(read);
  }

  /** Stops reading: the job settled while a descendant of it still holds a pipe. */
  close(): void {
    for (const reader of this.readers) reader.destroy();
  }

  /** True once every pipe reached its end (every writer of it is gone). */
  get ended(): boolean {
    return this.open === 0;
  }
}

/**
 * The probe of an adopted child whose pipes were handed over: once reaped, it settles when its
 * pipes have ended (what the job's descendants still write is read), at most `graceMs` later.
 */
export function pipedChildProbe(pipes: HandedPipes, graceMs: number): AdoptedProbe {
  let outcome: Exclude<ReturnType<AdoptedProbe>, 'running'> | undefined;
  let reapedAt = 0;
  return (job, killRequested) => {
    if (outcome === undefined) {
      const probed = childProbe(job, killRequested);
      if (probed === 'running') return 'running';
      outcome = probed;
      reapedAt = performance.now();
    }
    if (!pipes.ended && performance.now() - reapedAt < graceMs) return 'running';
    pipes.close();
    return outcome;
  };
}
