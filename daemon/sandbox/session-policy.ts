/**
 * The sandbox policy a session's call runs under (docs/sandbox.md), pure: what a command gets and
 * what the file methods check against are this one answer.
 */
import type { Config } from '../../protocol/config.js';
import type { SandboxMode, SandboxPolicy } from '../../protocol/sandbox.js';

/** What the policy is resolved against: the session's facts, the configuration, the daemon's cwd. */
export interface PolicyFacts {
  session: { cwd?: string; sandbox?: SandboxPolicy };
  config: Pick<Config, 'cwd' | 'defaultSandboxMode'>;
  /** The daemon's `process.cwd()`, the last fallback. */
  daemonCwd: string;
}

/**
 * The sandbox policy: the request's, else the session's, else `config.defaultSandboxMode`. A
 * confined mode always gets a workspace root: the policy's, else the session policy's, else the
 * session's cwd (then `config.cwd`, then the daemon's cwd, like the working directory).
 */
export function resolveSandboxPolicy(requested: SandboxPolicy | undefined, facts: PolicyFacts): SandboxPolicy {
  const { session, config } = facts;
  const mode: SandboxMode = requested?.mode ?? session.sandbox?.mode ?? config.defaultSandboxMode;
  // `network: 'off'` is the request's, else the session's; `on` is the default and is not spelled out.
  const network = requested?.network ?? session.sandbox?.network;
  const off = network === 'off' ? { network } : {};
  if (mode === 'danger-full-access') return { mode, ...off };
  const workspaceRoot =
    requested?.workspaceRoot ?? session.sandbox?.workspaceRoot ?? session.cwd ?? config.cwd ?? facts.daemonCwd;
  return { mode, workspaceRoot, ...off };
}
