/**
 * The Landlock launcher (docs/sandbox-backends.md): a script the daemon runs with `node` in place of the command.
 * It builds the ruleset of its plan, sets `PR_SET_NO_NEW_PRIVS`, restricts itself and then
 * `execvpe`s the command in the same process, so the shell and everything it starts stay in the
 * domain, keep the pid the daemon tracks, and report their own exit status. Every failure before
 * the exec is one `landlock: <reason>` line on stderr and exit status 1, with no stdout: the
 * runner-failure signature the daemon recognises (like bubblewrap's `bwrap: `).
 *
 * The command's environment arrives as JSON in `EXECD_LANDLOCK_ENV_<n>` chunks and the launcher
 * itself runs with nothing else: variables that would change how `node` starts (`NODE_OPTIONS`,
 * `LD_PRELOAD`, `OPENSSL_CONF`…) must not run code before the restriction.
 *
 * Usage: `node landlock-launcher.js <plan JSON> <file> [args…]`, or `--probe <plan JSON>`, which
 * restricts itself, checks that the first hidden directory is refused and prints the ABI.
 */
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, statSync, writeSync } from 'node:fs';
import { koffi as loadKoffi } from '../host/koffi.js';
import { CREATE_RULESET_VERSION, SYS_CREATE_RULESET } from './landlock-abi.js';
import {
  ENV_CHUNK_PREFIX,
  handledFs,
  NET,
  NET_ABI,
  planGrants,
  ruleRights,
  SCOPE,
  type Entry,
  type LandlockPlan,
} from './landlock-rules.js';
import { unixSocketFilter } from './unix-socket-filter.js';

const SYS_ADD_RULE = 445;
const SYS_RESTRICT_SELF = 446;
const RULE_PATH_BENEATH = 1;
const PR_SET_NO_NEW_PRIVS = 38;
const PR_SET_SECCOMP = 22;
const SECCOMP_MODE_FILTER = 2;
const SIGPIPE = 13;
const F_SETFD = 2;
const PR_CAPBSET_READ = 23;
const PR_CAPBSET_DROP = 24;
const PR_SET_SECUREBITS = 28;
const PR_CAP_AMBIENT = 47;
const PR_CAP_AMBIENT_CLEAR_ALL = 4;
const CAP_SETPCAP = 8;
/** `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set. */
const CAPABILITY_VERSION_3 = 0x20080522;
/** Root gains no capability at exec, and a command may not raise an ambient one; both locked. */
const SECUREBITS = (1 << 0) | (1 << 1) | (1 << 6) | (1 << 7);
/** `O_PATH` (the same value on x86-64 and arm64; node adds `O_CLOEXEC` itself). */
const O_PATH = 0o10000000;

/** The launcher's own failure: reported, never thrown past `main`. */
export class LaunchError extends Error {}

/** The libc calls of the restriction and the exec, through koffi. */
export interface Libc {
  syscall: (...args: unknown[]) => number | bigint;
  prctl: (...args: unknown[]) => number;
  execvpe: (file: string, argv: (string | null)[], envp: (string | null)[]) => number;
  signal: (signum: number, handler: null) => unknown;
  fcntl: (...args: unknown[]) => number;
  capset: (header: Buffer, data: Buffer) => number;
  strerror: (errnum: number) => string;
  errno: () => number;
  /** The address of a copy of `bytes` in memory that stays until `free`. */
  copy: (bytes: Buffer) => { address: bigint; free: () => void };
}

/** Loads libc's calls (koffi's native module first). */
export function loadLibc(): Libc {
  const koffi = loadKoffi();
  const lib = koffi.load('libc.so.6');
  return {
    syscall: lib.func('long syscall(long nr, ...)'),
    prctl: lib.func('int prctl(int option, ...)'),
    execvpe: lib.func('int execvpe(const char *file, const char **argv, const char **envp)'),
    signal: lib.func('void *signal(int signum, void *handler)'),
    fcntl: lib.func('int fcntl(int fd, int cmd, ...)'),
    capset: lib.func('int capset(void *header, void *data)'),
    strerror: lib.func('const char *strerror(int errnum)'),
    errno: () => koffi.errno(),
    copy: (bytes) => {
      const memory: unknown = koffi.alloc('uint8_t', bytes.length);
      koffi.encode(memory, 'uint8_t', [...bytes], bytes.length);
      return { address: koffi.address(memory), free: () => koffi.free(memory) };
    },
  };
}

function fail(libc: Libc, what: string): never {
  throw new LaunchError(`${what}: ${libc.strerror(libc.errno())}`);
}

/** The kernel's Landlock ABI version, or the reason there is none. */
function abiVersion(libc: Libc): number {
  const abi = Number(libc.syscall(SYS_CREATE_RULESET, 'void *', null, 'size_t', 0, 'uint32_t', CREATE_RULESET_VERSION));
  if (abi < 0) fail(libc, 'this kernel offers no Landlock');
  return abi;
}

function listDir(dir: string): Entry[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).map((entry) => ({
      name: entry.name,
      type: entry.isSymbolicLink() ? 'symlink' : entry.isDirectory() ? 'dir' : 'other',
    }));
  } catch {
    return [];
  }
}

function createRuleset(libc: Libc, abi: number, network: LandlockPlan['network']): number {
  const attr = Buffer.alloc(24);
  attr.writeBigUInt64LE(BigInt(handledFs(abi)), 0);
  let size = 8;
  if (abi >= NET_ABI) {
    size = 16;
    if (network === 'off') attr.writeBigUInt64LE(BigInt(NET.BIND_TCP | NET.CONNECT_TCP), 8);
  }
  if (abi >= 6) {
    size = 24;
    attr.writeBigUInt64LE(BigInt(SCOPE.ABSTRACT_UNIX_SOCKET | SCOPE.SIGNAL), 16);
  }
  const fd = Number(libc.syscall(SYS_CREATE_RULESET, 'void *', attr, 'size_t', size, 'uint32_t', 0));
  if (fd < 0) fail(libc, 'landlock_create_ruleset');
  return fd;
}

/**
 * The pty this process's standard input is (a confined terminal's), which stays its own: the plan
 * keeps `/dev/pts` out of reach, so reopening it (`/dev/stdin`) needs a rule of its own.
 */
function ownTerminal(): string[] {
  try {
    const path = readlinkSync('/proc/self/fd/0');
    return /^\/dev\/pts\/\d+$/.test(path) ? [path] : [];
  } catch {
    return [];
  }
}

/** Adds the plan's rules; a place that does not exist is skipped (it cannot be reached either). */
function addRules(libc: Libc, ruleset: number, abi: number, plan: LandlockPlan): void {
  for (const dir of plan.write) {
    // A writable root that is not there is the runner's failure, as bubblewrap's missing bind is.
    try {
      statSync(dir);
    } catch (error) {
      throw new LaunchError(`cannot grant ${dir}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
  }
  const rule = Buffer.alloc(12);
  const own = ownTerminal().map((path) => ({ path, kind: 'device' as const }));
  for (const grant of [...planGrants(plan, listDir), ...own]) {
    let fd: number;
    let isDir: boolean;
    try {
      fd = openSync(grant.path, O_PATH);
      isDir = statSync(grant.path).isDirectory();
    } catch {
      continue;
    }
    try {
      rule.writeBigUInt64LE(BigInt(ruleRights(grant.kind, isDir, abi)), 0);
      rule.writeInt32LE(fd, 8);
      const done = Number(
        libc.syscall(SYS_ADD_RULE, 'int', ruleset, 'int', RULE_PATH_BENEATH, 'void *', rule, 'uint32_t', 0),
      );
      if (done < 0) fail(libc, `landlock_add_rule ${grant.path}`);
    } finally {
      closeSync(fd);
    }
  }
}

/** Installs the seccomp filter that refuses new Unix sockets, and every socket under `network: 'off'` (see unix-socket-filter.ts). */
function refuseSockets(libc: Libc, network: LandlockPlan['network']): void {
  let program: Buffer;
  try {
    program = unixSocketFilter(process.arch, network);
  } catch (error) {
    throw new LaunchError((error as Error).message);
  }
  const filter = libc.copy(program);
  try {
    const fprog = Buffer.alloc(16);
    fprog.writeUInt16LE(program.length / 8, 0);
    fprog.writeBigUInt64LE(filter.address, 8);
    if (libc.prctl(PR_SET_SECCOMP, 'unsigned long', SECCOMP_MODE_FILTER, 'void *', fprog) !== 0)
      fail(libc, 'prctl(PR_SET_SECCOMP)');
  } finally {
    filter.free();
  }
}

/** The capability sets of this thread (the main one, which execs), from `/proc/self/status`. */
function capabilitySets(): Record<'CapInh' | 'CapPrm' | 'CapEff' | 'CapBnd' | 'CapAmb', bigint> {
  const sets = { CapInh: 0n, CapPrm: 0n, CapEff: 0n, CapBnd: 0n, CapAmb: 0n };
  for (const match of readFileSync('/proc/self/status', 'utf8').matchAll(/^(Cap\w+):\s*([0-9a-f]+)$/gm))
    if (match[1]! in sets) sets[match[1] as keyof typeof sets] = BigInt(`0x${match[2]}`);
  return sets;
}

/**
 * Drops every capability before the command runs (docs/sandbox-backends.md): the ambient set, the bounding set
 * and root's gain at exec where this process may change them (`CAP_SETPCAP`: a root daemon), then
 * the effective, permitted and inheritable sets. Checked afterwards: a set left non-empty is the
 * launcher's failure. An unprivileged daemon's bounding set stays as it was; with
 * `PR_SET_NO_NEW_PRIVS` no exec can gain from it.
 */
function dropCapabilities(libc: Libc): void {
  const zero = ['unsigned long', 0, 'unsigned long', 0, 'unsigned long', 0] as const;
  if (libc.prctl(PR_CAP_AMBIENT, 'unsigned long', PR_CAP_AMBIENT_CLEAR_ALL, ...zero) !== 0)
    fail(libc, 'prctl(PR_CAP_AMBIENT_CLEAR_ALL)');
  const mayDropBounding = (capabilitySets().CapEff & (1n << BigInt(CAP_SETPCAP))) !== 0n;
  if (mayDropBounding) {
    let last = 63;
    try {
      last = Number(readFileSync('/proc/sys/kernel/cap_last_cap', 'utf8').trim());
    } catch {
      // Unknown: try every number; one the kernel does not know reads as not in the set.
    }
    for (let cap = 0; cap <= last; cap++) {
      if (libc.prctl(PR_CAPBSET_READ, 'unsigned long', cap) !== 1) continue;
      if (libc.prctl(PR_CAPBSET_DROP, 'unsigned long', cap) !== 0) fail(libc, `prctl(PR_CAPBSET_DROP, ${cap})`);
    }
    if (libc.prctl(PR_SET_SECUREBITS, 'unsigned long', SECUREBITS) !== 0) fail(libc, 'prctl(PR_SET_SECUREBITS)');
  }
  const header = Buffer.alloc(8);
  header.writeUInt32LE(CAPABILITY_VERSION_3, 0);
  if (libc.capset(header, Buffer.alloc(24)) !== 0) fail(libc, 'capset');
  const left = capabilitySets();
  const checked: (keyof typeof left)[] = ['CapInh', 'CapPrm', 'CapEff', 'CapAmb'];
  if (mayDropBounding) checked.push('CapBnd');
  const kept = checked.filter((set) => left[set] !== 0n);
  if (kept.length > 0) throw new LaunchError(`capabilities left after the drop: ${kept.join(', ')}`);
}

/**
 * Applies the plan to this process: from here on, only what it grants is reachable. The one
 * restriction step of every confined process: the launcher before its exec, the confined spawner
 * (confined-spawn-worker.ts) before its first spawn. Returns the ABI; throws `LaunchError`.
 */
export function restrict(libc: Libc, plan: LandlockPlan): number {
  const abi = abiVersion(libc);
  if (plan.network === 'off' && abi < NET_ABI)
    throw new LaunchError(`network 'off' needs Landlock ABI ${NET_ABI} (TCP rules), this kernel has ABI ${abi}`);
  const ruleset = createRuleset(libc, abi, plan.network);
  try {
    addRules(libc, ruleset, abi, plan);
    // After the rules: opening each granted place may need the capabilities of a root daemon.
    dropCapabilities(libc);
    if (
      libc.prctl(
        PR_SET_NO_NEW_PRIVS,
        'unsigned long',
        1,
        'unsigned long',
        0,
        'unsigned long',
        0,
        'unsigned long',
        0,
      ) !== 0
    )
      fail(libc, 'prctl(PR_SET_NO_NEW_PRIVS)');
    refuseSockets(libc, plan.network);
    if (Number(libc.syscall(SYS_RESTRICT_SELF, 'int', ruleset, 'uint32_t', 0)) < 0)
      fail(libc, 'landlock_restrict_self');
  } finally {
    closeSync(ruleset);
  }
  return abi;
}

/** The command's environment, reassembled from its chunks. */
function commandEnv(): (string | null)[] {
  let json = '';
  for (let n = 0; process.env[`${ENV_CHUNK_PREFIX}${n}`] !== undefined; n++)
    json += process.env[`${ENV_CHUNK_PREFIX}${n}`];
  const env = JSON.parse(json || '{}') as Record<string, string>;
  return [...Object.entries(env).map(([key, value]) => `${key}=${value}`), null];
}

function parsePlan(text: string | undefined): LandlockPlan {
  try {
    return JSON.parse(text ?? '') as LandlockPlan;
  } catch {
    throw new LaunchError('the launcher was given no plan');
  }
}

/** Restricts this process to `plan`, then checks that the first hidden directory is refused; the ABI. */
export function restrictChecked(libc: Libc, plan: LandlockPlan): number {
  const abi = restrict(libc, plan);
  const hidden = plan.hidden[0];
  if (hidden !== undefined) {
    let reached = true;
    try {
      readdirSync(hidden);
    } catch {
      reached = false;
    }
    if (reached) throw new LaunchError(`the restriction does not hold: ${hidden} is still readable`);
  }
  return abi;
}

/** The probe: restrict, check that the restriction holds, print the ABI. */
function probe(libc: Libc, plan: LandlockPlan): void {
  writeSync(1, `${JSON.stringify({ abi: restrictChecked(libc, plan) })}\n`);
}

function main(args: string[]): void {
  let libc: Libc | undefined;
  try {
    libc = loadLibc();
    if (args[0] === '--probe') return probe(libc, parsePlan(args[1]));
    const [planText, file, ...rest] = args;
    const plan = parsePlan(planText);
    if (file === undefined) throw new LaunchError('the launcher was given no command');
    const env = commandEnv();
    restrict(libc, plan);
    // node ignores SIGPIPE; an ignored signal stays ignored across exec, and the shell must not.
    libc.signal(SIGPIPE, null);
    // node marks its standard streams close-on-exec; the command must inherit them.
    for (const fd of [0, 1, 2]) libc.fcntl(fd, F_SETFD, 'int', 0);
    libc.execvpe(file, [file, ...rest, null], env);
    fail(libc, `cannot exec ${file}`);
  } catch (error) {
    const reason = error instanceof LaunchError ? error.message : `unexpected failure: ${(error as Error).message}`;
    writeSync(2, `landlock: ${reason.replace(/\n/g, ' ')}\n`);
    process.exitCode = 1;
  }
}

// Run as a script only: the confined spawner imports `restrict` from here.
if (/[\\/]landlock-launcher\.js$/.test(process.argv[1] ?? '')) main(process.argv.slice(2));
