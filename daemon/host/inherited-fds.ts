/**
 * Descriptors the daemon inherited from whoever started it (a shell's `exec 200>file`, a harness's
 * pipe). Every descriptor Node and libuv open is close-on-exec; one that is not, above stderr, came
 * from the parent, and would reach every command, confined or not: it is closed at start-up, before
 * anything is spawned, so commands get only stdin, stdout, stderr and what the protocol asked for.
 */
import { closeSync, readdirSync, readFileSync } from 'node:fs';

/** The close-on-exec bit in `/proc/<pid>/fdinfo/<fd>`'s `flags` (octal `O_CLOEXEC`). */
const O_CLOEXEC = 0o2000000;

/** True when an fdinfo text says the descriptor is not close-on-exec (pure). */
export function isInheritable(fdinfo: string): boolean {
  const flags = /^flags:\s+([0-7]+)$/m.exec(fdinfo)?.[1];
  return flags !== undefined && (Number.parseInt(flags, 8) & O_CLOEXEC) === 0;
}

/** The descriptor of Node's IPC channel to its parent, when it has one (kept: it is the daemon's own). */
function ipcChannelFd(): number | undefined {
  const channel = process.channel as { fd?: unknown } | undefined;
  return typeof channel?.fd === 'number' ? channel.fd : undefined;
}

/**
 * Closes every descriptor above 2 that is not close-on-exec, but Node's IPC channel and `keep` (the
 * listeners an upgrade in place handed over). Returns the descriptors closed. Without `/proc` (not
 * Linux) nothing is known and nothing closed.
 */
export function closeInheritedFds(keep: readonly number[] = []): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc/self/fdinfo');
  } catch {
    return [];
  }
  const channel = ipcChannelFd();
  const closed: number[] = [];
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd <= 2 || fd === channel || keep.includes(fd)) continue;
    let info: string;
    try {
      info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
    } catch {
      continue; // the directory's own descriptor, gone once listed
    }
    if (!isInheritable(info)) continue;
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      // Closed meanwhile.
    }
  }
  return closed;
}
