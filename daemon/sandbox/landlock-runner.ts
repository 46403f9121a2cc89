/**
 * The Landlock runner (docs/sandbox-backends.md): the command is started as `node landlock-launcher.js <plan>
 * <argv…>`, which confines itself and execs the command in place. This module builds that argv
 * and the launcher's environment, and probes at start-up whether the kernel lets it run.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxGuarantee } from '../../protocol/sandbox.js';
import { isInside } from './bwrap-args.js';
import { launcherEnv, NET_ABI, type LandlockPlan } from './landlock-rules.js';
import type { ConfinedMode } from './modes.js';
import { runProbe } from './probe-process.js';

/** The launcher script, beside this module in `dist/`. */
export const LAUNCHER = join(import.meta.dirname, 'landlock-launcher.js');

/** How long the start-up probe may take before the runner counts as broken. */
const PROBE_TIMEOUT_MS = 10_000;

/**
 * Devices every confined command reads and writes: the null sink, randomness, its own terminal
 * (`/dev/tty` reaches only the controlling terminal of whoever opens it; the launcher adds the
 * pty its standard input is, see `ownTerminal` there).
 */
const DEVICES = ['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/tty'];

/**
 * `/dev` is kept out of the read grant of `/`: every pty of the daemon's user lives in `/dev/pts`
 * (other sessions' terminals too), `/dev/ptmx` opens new ones, and the consoles (`/dev/tty<n>`,
 * `/dev/vcs*`) are terminals too. Its names stay listable; of its files only the devices above,
 * its shared-memory directories (read) and the command's own pty (the launcher) are granted.
 */
const DEV = '/dev';

/** Directories of `/dev` that stay readable. */
const DEV_READABLE = ['/dev/shm', '/dev/mqueue', '/dev/hugepages'];

/** A path as the kernel sees it: rules and hidden-path checks compare resolved paths. */
function resolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** What the plan of a confined run depends on. */
export interface LandlockPlanInput {
  mode: ConfinedMode;
  workspaceRoot: string;
  hiddenDirs: string[];
  readableDirs: string[];
  /** The session's private temp dir (inside a hidden dir): writable in `workspace-write`, readable in `read-only`. */
  tempDir?: string;
  network: 'on' | 'off';
}

/**
 * The launcher's plan: read everything but the hidden dirs; in `workspace-write` write the
 * workspace and the session's own temp dir — not the host's temp dir nor `/dev/shm`, which every
 * session shares (another session's workspace may live there).
 */
export function landlockPlan(input: LandlockPlanInput): LandlockPlan {
  const writes = input.mode === 'workspace-write';
  const temp = input.tempDir === undefined ? [] : [resolved(input.tempDir)];
  return {
    read: ['/'],
    write: writes ? [resolved(input.workspaceRoot)] : [],
    devices: DEVICES,
    hidden: [...input.hiddenDirs.map(resolved), DEV],
    readable: [...input.readableDirs.map(resolved), ...DEV_READABLE, ...(writes ? [] : temp)],
    ownWrite: writes ? temp : [],
    listable: [DEV],
    network: input.network,
  };
}

/**
 * Why Landlock cannot enforce this plan's mode, or undefined: a `workspace-write` workspace that
 * contains one of the daemon's hidden places (the state dir, the socket's directory, a secret
 * file) could only be granted around it, entry by entry, so the workspace's own directory would
 * not be writable (no new file at its top). Refused, never half-enforced.
 */
export function landlockRefusal(input: LandlockPlanInput): string | undefined {
  if (input.mode !== 'workspace-write') return undefined;
  const workspace = resolved(input.workspaceRoot);
  const inside = input.hiddenDirs.find((dir) => isInside(resolved(dir), workspace));
  if (inside === undefined) return undefined;
  return (
    `the workspace ${workspace} contains the daemon's ${inside}, which Landlock can keep out of reach only ` +
    'by leaving the workspace itself unwritable; move the state directory (EXECD_STATE_DIR) and the socket ' +
    '(EXECD_SOCKET) outside the workspace, or use bubblewrap'
  );
}

/** The argv and environment that start `inner` confined by `plan`. */
export function landlockLaunch(plan: LandlockPlan, inner: string[], env: Record<string, string>) {
  return { argv: [process.execPath, LAUNCHER, JSON.stringify(plan), ...inner], env: launcherEnv(env) };
}

/** The probe's verdict: the ABI when the launcher confines, else the reason it cannot. */
export type LandlockProbe = { abi: number } | { unavailable: string };

/** Runs the launcher's probe against a scratch layout with a hidden directory. */
export async function probeLandlock(): Promise<LandlockProbe> {
  const scratch = mkdtempSync(join(tmpdir(), 'execd-probe-'));
  try {
    const hidden = join(scratch, 'hidden');
    const readable = join(hidden, 'readable');
    mkdirSync(readable, { recursive: true });
    const plan = landlockPlan({
      mode: 'workspace-write',
      workspaceRoot: scratch,
      hiddenDirs: [hidden],
      readableDirs: [readable],
      network: 'on',
    });
    const result = await runProbe(process.execPath, [LAUNCHER, '--probe', JSON.stringify(plan)], {
      timeoutMs: PROBE_TIMEOUT_MS,
      env: {},
    });
    const abi = /^\{"abi":(\d+)\}$/.exec(result.stdout.trim())?.[1];
    if (result.exitCode === 0 && abi !== undefined) return { abi: Number(abi) };
    return { unavailable: result.failure ?? (result.stderr.trim() || `exit code ${result.exitCode}`) };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * What the Landlock runner enforces on a kernel of `abi` (TCP from ABI 4, signal scoping from 6);
 * the daemon's socket through the launcher's seccomp filter, which refuses new Unix sockets.
 */
export function landlockGuarantees(abi: number): SandboxGuarantee[] {
  const guarantees: SandboxGuarantee[] = ['files', 'daemon-files', 'daemon-socket'];
  if (abi >= NET_ABI) guarantees.push('network-off');
  if (abi >= 6) guarantees.push('signals');
  return guarantees;
}
