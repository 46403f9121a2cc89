/**
 * The sandbox runner of this daemon: bubblewrap, probed once at start-up. A confined mode is only
 * ever run through a runner that the probe showed working; otherwise it fails closed with
 * SANDBOX_UNAVAILABLE and nothing runs.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { ExecdError } from '../../protocol/errors.js';
import type { SandboxMode } from '../../protocol/sandbox.js';
import type { ExecSpec, SandboxReport } from '../../protocol/types.js';
import { ensurePrivateDir } from '../../spill/spill-file.js';
import type { TerminateOptions } from '../executor/kill.js';
import { bwrapArgv } from './bwrap-args.js';
import { enforceableModes, isConfined, type ConfinedMode } from './modes.js';

/** The name of the only runner execd has. */
export const BWRAP = 'bwrap';

/** How long the start-up probe may take before the runner counts as broken. */
const PROBE_TIMEOUT_MS = 10_000;

/** The daemon's runner, as the probe found it. */
export interface SandboxRunner {
  readonly enforcement: typeof BWRAP;
  readonly bwrapPath: string;
  /** Why confined modes cannot be enforced; undefined when the runner works. */
  readonly unavailable: string | undefined;
  /** The modes `initialize` advertises. */
  readonly modes: SandboxMode[];
}

/** A confined run's wrapped argv, how to kill it, and what its result reports. */
export interface Confinement {
  mode: ConfinedMode;
  enforcement: typeof BWRAP;
  argv: string[];
  /** bwrap leads the group: spare it the SIGTERM so it reports the command's own status. */
  terminate: TerminateOptions;
}

/** The daemon's places a confined command must not reach, and the ones it must still read. */
export interface DaemonPlaces {
  /** The socket's and the state's directories. */
  hiddenDirs: string[];
  /** The secret files given by path (see `hidden-paths.ts`). */
  hiddenFiles: string[];
  /** The session's spill directory. */
  spillDir: string;
}

/** Runs a bwrap with the confined layout once; resolves undefined when it works, else the reason. */
export async function probeBwrap(bwrapPath: string): Promise<string | undefined> {
  const scratch = mkdtempSync(join(tmpdir(), 'execd-probe-'));
  try {
    const hidden = join(scratch, 'hidden');
    const readable = join(hidden, 'readable');
    mkdirSync(readable, { recursive: true });
    // A secret file too: a bwrap that cannot cover one must not pass for working.
    const secret = join(scratch, 'secret');
    writeFileSync(secret, '');
    const argv = bwrapArgv(
      {
        mode: 'workspace-write',
        bwrapPath,
        workspaceRoot: scratch,
        workdir: scratch,
        hiddenDirs: [hidden],
        hiddenFiles: [secret],
        readableDirs: [readable],
      },
      ['true'],
    );
    const result = await execa(argv[0]!, argv.slice(1), { reject: false, timeout: PROBE_TIMEOUT_MS, stdin: 'ignore' });
    if (result.exitCode === 0) return undefined;
    const reason = result.failed && result.exitCode === undefined ? result.shortMessage : result.stderr.trim();
    return reason || `exit code ${result.exitCode}`;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Probes bwrap and returns the runner this daemon uses for its whole life. */
export async function createSandboxRunner(bwrapPath: string): Promise<SandboxRunner> {
  const unavailable = await probeBwrap(bwrapPath);
  return { enforcement: BWRAP, bwrapPath, unavailable, modes: enforceableModes(unavailable === undefined) };
}

/** SANDBOX_UNAVAILABLE for a confined mode this daemon cannot enforce. */
export function sandboxUnavailable(mode: SandboxMode, reason: string): ExecdError {
  return new ExecdError('SANDBOX_UNAVAILABLE', `no sandbox runner can enforce ${mode}: ${reason}`);
}

/**
 * The confinement of a spec: undefined for `danger-full-access` (runs unconfined), the wrapped
 * argv for a confined mode, or SANDBOX_UNAVAILABLE when the runner does not work (fail closed).
 */
export function confine(
  runner: SandboxRunner,
  spec: ExecSpec,
  places: DaemonPlaces,
): Confinement | ExecdError | undefined {
  const { mode, workspaceRoot } = spec.sandboxPolicy;
  if (!isConfined(mode)) return undefined;
  if (runner.unavailable !== undefined)
    return sandboxUnavailable(mode, `${BWRAP} does not work here (${runner.unavailable})`);
  // The spill directory must exist before bwrap can bind it.
  try {
    ensurePrivateDir(places.spillDir);
  } catch (error) {
    return sandboxUnavailable(mode, `cannot create the session's spill directory: ${(error as Error).message}`);
  }
  const argv = bwrapArgv(
    {
      mode,
      bwrapPath: runner.bwrapPath,
      workspaceRoot: workspaceRoot ?? spec.workdir,
      workdir: spec.workdir,
      hiddenDirs: places.hiddenDirs,
      hiddenFiles: places.hiddenFiles,
      readableDirs: [places.spillDir],
    },
    spec.argv,
  );
  return { mode, enforcement: runner.enforcement, argv, terminate: { spareLeaderOnTerm: true } };
}

/** What a result reports: unconfined runs are never denied; confined ones name their runner. */
export function sandboxReport(mode: SandboxMode, confinement: Confinement | undefined, denied: boolean): SandboxReport {
  return confinement ? { mode, denied, enforcement: confinement.enforcement } : { mode, denied: false };
}
