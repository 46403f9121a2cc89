/**
 * The libc calls an upgrade in place needs (docs/deployment.md), through koffi: `execve` replaces
 * the daemon's program under the same pid, `fcntl` lets exactly the handed-over descriptors cross
 * it, `dup` keeps a listener's socket open once Node has closed its server, `prctl` makes the
 * daemon the reaper of its spawners' children, and `waitpid` reaps children libuv does not know
 * (the jobs an earlier program of this process started); `malloc_trim` gives the memory freed in
 * malloc's arenas back to the kernel. Linux with glibc only; each function says why it cannot run
 * instead of throwing.
 */
import { koffi } from './koffi.js';

const F_GETFD = 1;
const F_SETFD = 2;
const FD_CLOEXEC = 1;
const PR_SET_CHILD_SUBREAPER = 36;
const WNOHANG = 1;

/** The bound functions. */
interface Libc {
  execve(path: string, argv: Array<string | null>, envp: Array<string | null>): number;
  fcntl(fd: number, cmd: number, arg: number): number;
  dup(fd: number): number;
  close(fd: number): number;
  prctl(option: number, ...rest: unknown[]): number;
  waitpid(pid: number, status: number[], options: number): number;
  ioctl(fd: number, request: number, ...rest: unknown[]): number;
  malloc_trim(pad: number): number;
  errno(): number;
}

let bound: Libc | string | undefined;

/** The libc functions, or why they cannot be had here (not Linux, no glibc, koffi missing). */
export function libc(): Libc | string {
  if (bound !== undefined) return bound;
  if (process.platform !== 'linux') return (bound = `these libc calls are Linux-only (this is ${process.platform})`);
  try {
    const ffi = koffi();
    const lib = ffi.load('libc.so.6');
    bound = {
      execve: lib.func('int execve(const char *path, const char **argv, const char **envp)') as Libc['execve'],
      fcntl: lib.func('int fcntl(int fd, int cmd, int arg)') as Libc['fcntl'],
      dup: lib.func('int dup(int fd)') as Libc['dup'],
      close: lib.func('int close(int fd)') as Libc['close'],
      prctl: lib.func('int prctl(int option, ...)') as Libc['prctl'],
      waitpid: lib.func('int waitpid(int pid, _Out_ int *status, int options)') as Libc['waitpid'],
      ioctl: lib.func('int ioctl(int fd, unsigned long request, ...)') as Libc['ioctl'],
      malloc_trim: lib.func('int malloc_trim(size_t pad)') as Libc['malloc_trim'],
      errno: () => ffi.errno(),
    };
    return bound;
  } catch (error) {
    return (bound = `cannot call libc: ${(error as Error).message}`);
  }
}

/** Sets or clears a descriptor's close-on-exec flag; returns why it could not. */
export function setCloseOnExec(fd: number, on: boolean): string | undefined {
  const c = libc();
  if (typeof c === 'string') return c;
  const flags = c.fcntl(fd, F_GETFD, 0);
  if (flags < 0) return `fcntl(${fd}, F_GETFD) failed (errno ${c.errno()})`;
  const next = on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC;
  if (c.fcntl(fd, F_SETFD, next) < 0) return `fcntl(${fd}, F_SETFD) failed (errno ${c.errno()})`;
  return undefined;
}

/** A copy of a descriptor (not close-on-exec), or why there is none. */
export function duplicate(fd: number): number | string {
  const c = libc();
  if (typeof c === 'string') return c;
  const copy = c.dup(fd);
  return copy < 0 ? `dup(${fd}) failed (errno ${c.errno()})` : copy;
}

/** Closes a descriptor this module made (a `duplicate`); errors are ignored (it is gone either way). */
export function closeFd(fd: number): void {
  const c = libc();
  if (typeof c !== 'string') c.close(fd);
}

/**
 * Makes this process the reaper of its descendants' orphans (or stops it being one): a spawner
 * process that exits leaves its children to the daemon instead of to init. Returns why not.
 */
export function setChildSubreaper(on: boolean): string | undefined {
  const c = libc();
  if (typeof c === 'string') return c;
  if (c.prctl(PR_SET_CHILD_SUBREAPER, 'unsigned long', on ? 1 : 0) !== 0)
    return `prctl(PR_SET_CHILD_SUBREAPER) failed (errno ${c.errno()})`;
  return undefined;
}

/** How a reaped child ended: its exit code, or the signal number that killed it. */
export interface WaitStatus {
  exitCode: number | null;
  signal: number | null;
}

/** Decodes a `waitpid` status word (pure): WIFEXITED's code, else WIFSIGNALED's signal. */
export function decodeWaitStatus(status: number): WaitStatus {
  const low = status & 0x7f;
  if (low === 0) return { exitCode: (status >> 8) & 0xff, signal: null };
  return { exitCode: null, signal: low };
}

/** What `reapNoHang` found. */
export type Reaped =
  | { pid: number; status: WaitStatus }
  | 'running'
  /** No child of this process (ECHILD): reaped elsewhere, or never its child. */
  | 'not-a-child'
  | { error: string };

/**
 * Reaps child `pid` (or any child, -1) if it has ended, without waiting: its pid and status, `running`
 * while it runs, `not-a-child` when it is no child of this process, or why waitpid failed.
 */
export function reapNoHang(pid: number): Reaped {
  const c = libc();
  if (typeof c === 'string') return { error: c };
  const status = [0];
  const reaped = c.waitpid(pid, status, WNOHANG);
  if (reaped === 0) return 'running';
  if (reaped < 0) {
    const errno = c.errno();
    return errno === 10 ? 'not-a-child' : { error: `waitpid(${pid}) failed (errno ${errno})` };
  }
  return { pid: reaped, status: decodeWaitStatus(status[0]!) };
}

/**
 * Replaces this process's program (`execve`); returns only when that failed, with the reason.
 * Every descriptor still close-on-exec closes; the others are the new program's.
 */
export function execProgram(path: string, argv: string[], env: Record<string, string>): string {
  const c = libc();
  if (typeof c === 'string') return c;
  const envp = Object.entries(env).map(([key, value]) => `${key}=${value}`);
  c.execve(path, [...argv, null], [...envp, null]);
  return `execve(${path}) failed (errno ${c.errno()})`;
}

/** TCFLSH with TCIFLUSH (asm-generic/ioctls.h, termbits.h). */
const TCFLSH = 0x540b;
const TCIFLUSH = 0;

/** Discards what was typed into a tty and not read yet (`tcflush(fd, TCIFLUSH)`); returns why it could not. */
export function flushTtyInput(fd: number): string | undefined {
  const c = libc();
  if (typeof c === 'string') return c;
  return c.ioctl(fd, TCFLSH, 'int', TCIFLUSH) < 0 ? `tcflush failed (errno ${c.errno()})` : undefined;
}

/**
 * Gives the free pages of every malloc arena back to the kernel (`malloc_trim(0)`). glibc keeps
 * what a thread freed in that thread's arena, and keeps the arenas of threads that ended: after a
 * burst (the libuv pool, the pattern thread) that was 2–2.5 MB of an idle daemon. Returns why not.
 */
export function trimMalloc(): string | undefined {
  const c = libc();
  if (typeof c === 'string') return c;
  c.malloc_trim(0);
  return undefined;
}
