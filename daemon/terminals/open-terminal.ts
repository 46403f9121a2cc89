/**
 * Opening a terminal (docs/terminals.md): the program (`bash --noprofile --norc -i` with the daemon's
 * prompt marker, or the request's `argv`), its working directory, the session environment with
 * `TERM=xterm-256color`, the session's sandbox mode (the same bwrap runner as a run's), the limits, and
 * the wait for the first readiness whose output becomes `motd`.
 */
import { randomBytes } from 'node:crypto';
import { accessSync, constants, rmSync, statSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { ExecdError } from '../../protocol/errors.js';
import type { ParamsOf } from '../../protocol/methods.js';
import type { TerminalOpen } from '../../protocol/methods.js';
import type { TerminalOpenResult } from '../../protocol/terminal.js';
import { configFor } from '../sessions/bound-config.js';
import type { DaemonContext } from '../context.js';
import { checkWorkdir } from '../executor/spawn.js';
import { checkProcessLimits, launchTarget, prepareLaunch, resolveLaunch } from '../runs/launch.js';
import type { Session } from '../sessions/sessions.js';
import { ensurePrivateDir } from '../../spill/spill-file.js';
import { sessionSpillDir } from '../sessions/session-lifecycle.js';
import { bootPromptCommand, newSecret, setupLine } from './markers.js';
import { spawnWithin } from '../executor/spawn-child.js';
import { loadPty } from './pty.js';
import { waitReady } from './readiness.js';
import { boundedTail } from './output.js';
import { Terminal } from './terminal.js';

/** The default program of a terminal. */
export const DEFAULT_SHELL_ARGV = ['bash', '--noprofile', '--norc', '-i'];
/** Silence after which `terminal/open` stops waiting for the first readiness. */
const OPEN_IDLE_MS = 1_000;
/** Longest wait for the first readiness of `terminal/open`. */
const OPEN_TIMEOUT_MS = 10_000;

type OpenParams = ParamsOf<typeof TerminalOpen>;

/** Whether `program` names an executable file, directly or on `PATH` (as execvp would find it). */
export function findProgram(program: string, path: string | undefined, cwd: string): boolean {
  const executable = (file: string) => {
    try {
      accessSync(file, constants.X_OK);
      return statSync(file).isFile();
    } catch {
      return false;
    }
  };
  if (program.includes('/')) return executable(isAbsolute(program) ? program : join(cwd, program));
  return (path ?? '').split(':').some((dir) => dir !== '' && executable(join(dir, program)));
}

/**
 * Writes a shell terminal's setup line to a fresh file of its session's spill directory, the one
 * place of the daemon's that the session's confined commands may read and no other session's
 * can: owner-only, a name no one can guess, created exclusively. The terminal removes it at its
 * boot marker, or when the shell exits first.
 */
function writeSetupFile(daemon: DaemonContext, sessionId: string, id: string, secret: string): string | ExecdError {
  const dir = sessionSpillDir(daemon, sessionId);
  const file = join(dir, `${id}-${randomBytes(8).toString('hex')}.setup`);
  try {
    ensurePrivateDir(dir);
    writeFileSync(file, setupLine(secret), { mode: 0o600, flag: 'wx' });
  } catch (error) {
    return new ExecdError('SPAWN_FAILED', `cannot write the terminal's setup file: ${(error as Error).message}`);
  }
  return file;
}

/** LIMIT_EXCEEDED when one more terminal would pass `maxTerminalsPerSession`, `maxTerminals`, `maxProcessesPerSession` or `maxProcesses`. */
function checkTerminalLimits(daemon: DaemonContext, sessionId: string): ExecdError | undefined {
  // Per session: the bound configuration; daemon-wide (`maxTerminals`): the live one.
  const { maxTerminalsPerSession } = configFor(daemon, sessionId);
  const { maxTerminals } = daemon.config.get();
  if (daemon.terminals.running(sessionId).length >= maxTerminalsPerSession) {
    return new ExecdError('LIMIT_EXCEEDED', `maxTerminalsPerSession limit reached (${maxTerminalsPerSession})`);
  }
  if (daemon.terminals.running().length >= maxTerminals) {
    return new ExecdError('LIMIT_EXCEEDED', `maxTerminals limit reached (${maxTerminals})`);
  }
  return checkProcessLimits(daemon, sessionId);
}

/** Opens a terminal for `session`; the result carries the output until its first readiness. */
export async function openTerminal(
  daemon: DaemonContext,
  session: Session,
  params: OpenParams,
): Promise<TerminalOpenResult | ExecdError> {
  const limited = checkTerminalLimits(daemon, session.id);
  if (limited) return limited;
  // Reserved before the first await: concurrent opens cannot all pass the process limits.
  const release = daemon.processes.reserve(session.id);
  try {
    return await openReserved(daemon, session, params);
  } finally {
    release();
  }
}

/** The rest of `openTerminal` once its process is reserved. */
async function openReserved(
  daemon: DaemonContext,
  session: Session,
  params: OpenParams,
): Promise<TerminalOpenResult | ExecdError> {
  const config = configFor(daemon, session);
  const spec = resolveLaunch(daemon, session, {
    sessionId: session.id,
    command: 'bash',
    workdir: params.cwd,
    env: params.env,
    sandboxPolicy: params.sandboxPolicy,
    limits: params.limits,
  });
  if (spec instanceof ExecdError) return spec;
  const missing = checkWorkdir(spec.workdir);
  if (missing) return missing;
  const secret = params.argv === undefined ? newSecret() : undefined;
  const argv = params.argv ?? DEFAULT_SHELL_ARGV;
  const env: Record<string, string> = { ...spec.env, TERM: params.env?.TERM ?? 'xterm-256color' };
  if (!findProgram(argv[0]!, env.PATH, spec.workdir)) {
    return new ExecdError(
      'SPAWN_FAILED',
      `cannot start ${argv[0]}: no such executable (looked up on the terminal's PATH)`,
    );
  }
  spec.argv = argv;
  const id = daemon.terminals.allocateId();
  let setupFile: string | undefined;
  if (secret !== undefined) {
    // No history file of the agent's commands in the user's home, unless asked for.
    env.HISTFILE = params.env?.HISTFILE ?? '';
    // The secret is neither in the environment nor typed into the terminal: the shell reads it
    // from a file in the session's spill directory (see bootPromptCommand).
    const made = writeSetupFile(daemon, session.id, id, secret);
    if (made instanceof ExecdError) return made;
    setupFile = made;
    env.PROMPT_COMMAND = bootPromptCommand(setupFile);
  }
  // The runner sees the terminal's own environment (the Landlock launcher carries it to the shell).
  spec.env = env;
  const launch = prepareLaunch(daemon, 'terminal', spec, session.id, { unit: id, config });
  if (launch instanceof ExecdError) {
    if (setupFile !== undefined) rmSync(setupFile, { force: true });
    return launch;
  }
  const { scopes } = daemon.processes;
  const { confinement } = launch;
  const launched = confinement?.argv ?? argv;

  const terminal = new Terminal({
    id,
    ...(params.name === undefined ? {} : { name: params.name }),
    ownerSession: session.id,
    argv,
    cwd: spec.workdir,
    sandboxMode: spec.sandboxPolicy.mode,
    cols: params.cols ?? 80,
    rows: params.rows ?? 24,
    ...(secret === undefined ? {} : { secret }),
    ...(setupFile === undefined ? {} : { setupFile }),
    scrollbackBytes: config.terminalScrollbackBytes,
  });
  try {
    // Born in the terminal's cgroup, so that what leaves its session is still found at close.
    const pty = spawnWithin(launchTarget(daemon, launch), () =>
      loadPty().spawn(launched[0]!, launched.slice(1), {
        name: 'xterm-256color',
        cols: terminal.cols,
        rows: terminal.rows,
        cwd: spec.workdir,
        env: confinement?.env ?? spec.env,
        encoding: null,
      }),
    );
    terminal.attachPty(pty);
  } catch (error) {
    scopes.release(session.id, id);
    if (setupFile !== undefined) rmSync(setupFile, { force: true });
    return new ExecdError('SPAWN_FAILED', `cannot start ${argv[0]} on a PTY: ${(error as Error).message}`);
  }
  daemon.terminals.add(terminal);
  daemon.log.info({ terminalId: terminal.id, sessionId: session.id, pid: terminal.pid }, 'terminal opened');
  return awaitFirstReadiness(terminal, config.maxOutputBytes);
}

/** Waits for a just-opened terminal's first readiness; its output so far becomes the `motd`. */
async function awaitFirstReadiness(terminal: Terminal, maxOutputBytes: number): Promise<TerminalOpenResult> {
  terminal.busy = true;
  const opened = Date.now();
  await waitReady(terminal, { idleMs: OPEN_IDLE_MS, timeoutMs: OPEN_TIMEOUT_MS, before: [] });
  // The shell's read of its setup line (see bootPromptCommand) may look like a wait for input: a
  // shell terminal opens at its first prompt, unless that does not come within the open's limit.
  if (terminal.isShell && !terminal.atOwnPrompt && terminal.running) {
    const left = Math.max(0, OPEN_TIMEOUT_MS - (Date.now() - opened));
    await waitReady(terminal, {
      idleMs: left,
      timeoutMs: left,
      before: [],
      markerEnds: (marker) => marker.kind === 'prompt',
    });
  }
  // The prompt text follows its marker, sometimes in the next read: it belongs to the motd.
  if (terminal.isShell && terminal.running) await waitReady(terminal, { idleMs: 30, timeoutMs: 200, before: [] });
  terminal.busy = false;
  const motd = boundedTail(terminal.scrollback.rawFrom(0).bytes, maxOutputBytes);
  return { terminal: terminal.snapshot(), motd: motd.text };
}
