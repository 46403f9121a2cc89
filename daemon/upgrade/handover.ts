/**
 * The handover file of an upgrade in place (docs/deployment.md): the daemon that execs itself writes,
 * 0600 in its state dir, which of its descriptors stay open across `execve` and what each is (the
 * private socket, a `--listen` listener), and names the file in `EXECD_HANDOVER`. The new program
 * of the same process reads it once at start, before it closes what it inherited, listens on those
 * descriptors instead of binding, and deletes the file. A file that does not name this very
 * process (its pid and /proc start time) is ignored: a stray variable never makes a daemon take
 * descriptors it was not given.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { holderOf, readHolder, type LockHolder } from '../../shared/lock-file.js';
import type { HandedPipe } from '../jobs/job-pipes.js';

/** The variable naming the handover file. */
export const HANDOVER_ENV = 'EXECD_HANDOVER';

/** A listener handed over: its descriptor and what it is. */
export type HandedListener =
  { kind: 'socket'; fd: number; path: string } | { kind: 'network'; fd: number; url: string };

/** What the earlier program of this process handed over. */
export interface Handover {
  /** The process that wrote it: the new program must be that same process. */
  holder: LockHolder;
  /** The version of the program that handed over. */
  fromVersion: string;
  listeners: HandedListener[];
  /** The output pipes of kept confined jobs (job-pipes.ts). */
  pipes: HandedPipe[];
}

/** Where a state dir's handover file goes. */
export function handoverPath(stateDir: string): string {
  return join(stateDir, 'handover.json');
}

/** Writes the handover file (0600, replaced whole); throws a one-line reason. */
export function writeHandover(path: string, handover: Handover): void {
  rmSync(path, { force: true });
  writeFileSync(path, `${JSON.stringify(handover)}\n`, { mode: 0o600, flag: 'wx' });
}

function isListener(value: unknown): value is HandedListener {
  if (typeof value !== 'object' || value === null) return false;
  const item = value as Record<string, unknown>;
  if (!Number.isInteger(item.fd) || (item.fd as number) <= 2) return false;
  if (item.kind === 'socket') return typeof item.path === 'string';
  return item.kind === 'network' && typeof item.url === 'string';
}

function isPipe(value: unknown): value is HandedPipe {
  if (typeof value !== 'object' || value === null) return false;
  const item = value as Record<string, unknown>;
  return (
    typeof item.jobId === 'string' &&
    (item.stream === 'stdout' || item.stream === 'stderr') &&
    Number.isInteger(item.fd) &&
    (item.fd as number) > 2
  );
}

/** Every descriptor a handover names (kept open at start, see inherited-fds.ts). */
export function handedFds(handover: Handover | undefined): number[] {
  if (!handover) return [];
  return [...handover.listeners.map((listener) => listener.fd), ...handover.pipes.map((pipe) => pipe.fd)];
}

/** Parses a handover file's text for process `me` (pure); undefined when it is not for it. */
export function parseHandover(text: string, me: LockHolder): Handover | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { holder, fromVersion, listeners, pipes = [] } = parsed as Record<string, unknown>;
  const h = holder as Partial<LockHolder> | undefined;
  if (h?.pid !== me.pid || h.startTime !== me.startTime) return undefined;
  if (typeof fromVersion !== 'string' || !Array.isArray(listeners) || !listeners.every(isListener)) return undefined;
  if (!Array.isArray(pipes) || !pipes.every(isPipe)) return undefined;
  return { holder: me, fromVersion, listeners, pipes };
}

let taken: Handover | undefined;

/**
 * Takes the handover this process was given, once: reads and deletes the file `EXECD_HANDOVER`
 * names and removes the variable, so no command inherits it. Undefined when there is none.
 */
export function takeHandover(): Handover | undefined {
  const path = process.env[HANDOVER_ENV];
  if (path === undefined) return taken;
  delete process.env[HANDOVER_ENV];
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  rmSync(path, { force: true });
  taken = parseHandover(text, holderOf(process.pid));
  return taken;
}

/** The handover taken at start (`takeHandover`), if any. */
export function handedOver(): Handover | undefined {
  return taken;
}

/**
 * Before a handed-over daemon claims its places: the locks its earlier program took name this very
 * process (same pid, same start time), and are its own to take again, so they are removed first.
 */
export function releaseOwnLocks(paths: readonly string[]): void {
  const me = holderOf(process.pid);
  for (const path of paths) {
    const holder = readHolder(path);
    if (holder?.pid === me.pid && holder.startTime === me.startTime) rmSync(path, { force: true });
  }
}
