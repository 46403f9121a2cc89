/**
 * The kernel's Landlock ABI, asked from the daemon's own process: `landlock_create_ruleset` with
 * the version flag creates nothing and restricts nothing. It answers in microseconds where the
 * launcher's probe (a Node process of its own) takes ~50 ms of CPU, so the daemon can answer
 * `initialize` with what the kernel offers while that probe still runs (see `runner.ts`).
 */
import { constants } from 'node:os';
import { koffi } from '../host/koffi.js';

/** `landlock_create_ruleset`: the same number on x86-64 and arm64 (syscalls from 403 on share one table). */
export const SYS_CREATE_RULESET = 444;
/** Its flag that asks for the ABI version instead of creating a ruleset. */
export const CREATE_RULESET_VERSION = 1;

/** The errno's name (`ENOSYS`, `EOPNOTSUPP`), for the reason a client reads. */
function errnoName(errno: number): string {
  return Object.entries(constants.errno).find(([, value]) => value === errno)?.[0] ?? `errno ${errno}`;
}

/** The ABI version this kernel's Landlock offers, or why there is none here. */
export function landlockAbiHere(): { abi: number } | { unavailable: string } {
  if (process.platform !== 'linux') return { unavailable: `Landlock is Linux-only (this is ${process.platform})` };
  try {
    const ffi = koffi();
    const syscall = ffi.load('libc.so.6').func('long syscall(long nr, ...)') as (...args: unknown[]) => number | bigint;
    const abi = Number(syscall(SYS_CREATE_RULESET, 'void *', null, 'size_t', 0, 'uint32_t', CREATE_RULESET_VERSION));
    if (abi < 1) return { unavailable: `this kernel offers no Landlock (${errnoName(ffi.errno())})` };
    return { abi };
  } catch (error) {
    return { unavailable: `cannot ask the kernel: ${(error as Error).message}` };
  }
}
