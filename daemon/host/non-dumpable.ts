/**
 * Marking the daemon's processes non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`). Their memory holds the
 * token and the environment of every command they start; non-dumpable, no core file of them is
 * written, and no other process of the same uid — an unconfined command, any other process of that
 * user — can read their `/proc/<pid>/environ`, `mem` or `fd/`, or ptrace them: only a holder of
 * CAP_SYS_PTRACE can. (Confined commands are kept out of those files already: bubblewrap's pid
 * namespace hides the daemon, and a Landlock domain cannot ptrace-access a process outside it.)
 *
 * The flag resets on `execve`, so every command the daemon starts is dumpable as usual; the
 * spawner process (a fresh `node`) sets it for itself.
 */
import { koffi } from './koffi.js';

const PR_SET_DUMPABLE = 4;

/** Makes this process non-dumpable; returns why it could not (not Linux, no glibc, a refused call), or undefined. */
export function makeNonDumpable(): string | undefined {
  if (process.platform !== 'linux') return `prctl(PR_SET_DUMPABLE) is Linux-only (this is ${process.platform})`;
  try {
    const ffi = koffi();
    const prctl = ffi.load('libc.so.6').func('int prctl(int option, ...)') as (...args: unknown[]) => number;
    if (prctl(PR_SET_DUMPABLE, 'unsigned long', 0) !== 0)
      return `prctl(PR_SET_DUMPABLE, 0) failed (errno ${ffi.errno()})`;
    return undefined;
  } catch (error) {
    return `cannot call prctl: ${(error as Error).message}`;
  }
}
