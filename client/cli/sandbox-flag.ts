/** `--sandbox MODE` of `execd run` and `execd start`: the request's own sandbox policy (docs/sandbox.md). */
import { isAbsolute } from 'node:path';
import { SANDBOX_MODES, type SandboxPolicy } from '../../protocol/sandbox.js';
import { usageError } from './errors.js';

/** The help line of `--sandbox`. */
export const SANDBOX_HELP = `  --sandbox MODE     confine this command: ${SANDBOX_MODES.join(', ')}
                     (workspace-write: writes only under --workdir); the session's policy bounds it`;

/**
 * The policy `--sandbox MODE` asks for, undefined without the flag. A workspace-write command may
 * write under its working directory, the one place the CLI's user pointed at; a relative one the
 * daemon resolves against the session's cwd (as it does a workdir left to it), so then the
 * session's own root applies.
 */
export function sandboxPolicyOf(
  mode: string | undefined,
  workdir: string | undefined,
  command: string,
): SandboxPolicy | undefined {
  if (mode === undefined) return undefined;
  if (!(SANDBOX_MODES as readonly string[]).includes(mode)) {
    throw usageError(command, `--sandbox must be one of ${SANDBOX_MODES.join(', ')}, got ${JSON.stringify(mode)}`);
  }
  const chosen = mode as SandboxPolicy['mode'];
  return chosen === 'workspace-write' && workdir !== undefined && isAbsolute(workdir)
    ? { mode: chosen, workspaceRoot: workdir }
    : { mode: chosen };
}
