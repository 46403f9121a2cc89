/**
 * The ready tool set a harness registers for its model (docs/library.md): the shell tool of this platform
 * (`bash`, or `pwsh` on Windows), `job_output` and `job_kill` when background runs are enabled, the
 * system-prompt section, and completion notices of background jobs.
 */
import { SessionOpen } from '../../protocol/methods.js';
import { PLATFORM, type PlatformFacts } from '../../protocol/platform.js';
import type { JobSnapshot } from '../../protocol/types.js';
import type { ExecdClient } from '../connection.js';
import { renderJobExited } from '../../shared/render.js';
import { BASH_FLAVOR, PWSH_FLAVOR, systemPromptSection, type ShellFlavor } from './description.js';
import { resolveDshHome } from './dsh-home.js';
import { declaredTargets, type ApproveEscalation } from './escalation.js';
import {
  createJobKillTool,
  createJobListTool,
  createJobOutputTool,
  type JobKillDetails,
  type JobListDetails,
  type JobOutputDetails,
} from './job-tools.js';
import { createPersistentShellTool, type PersistentShellTool } from './persistent-shell.js';
import { argsConfigOf, createShellTool, type ShellToolDetails } from './shell-tool.js';
import type { JobNotice, ModelTool, SystemPromptSection, ToolSession } from './types.js';

/** What the tool set is built from. */
export interface ShellToolsOptions {
  /** A connected client (see `connect`). */
  client: ExecdClient;
  /**
   * The agent session. With a `cwd`, the session is opened (or reattached) in the daemon; without
   * one, the harness must already have opened it on this client.
   */
  session: ToolSession;
  /** Offer `run_in_background` and the job tools; default: what the daemon advertises. */
  enableRunInBackground?: boolean;
  /**
   * A foreground run still going after this many ms goes on as a background job (`shell/run`
   * `yieldMs`, docs/reconnect.md); the model reads its output so far and the job's id, and follows it with
   * the job tools. Only with background runs; default: off (no model-visible parameter either way).
   * With `persistent`, a command still going then is left running in the shell (`terminal/run`
   * `yieldMs`) and the next call shows what it printed since.
   */
  yieldMs?: number;
  /** Approves escalations; without it, no `sandbox_permissions` is offered. */
  approveEscalation?: ApproveEscalation;
  /** Receives a notice when a background job of the session settles. */
  onJobExited?: (notice: JobNotice) => void;
  /** The shell flavour; default: the platform's (`bash`, or `pwsh` on Windows). */
  flavor?: ShellFlavor;
  /**
   * `DSH_HOME` of every command, unless the session names its own (`session.dshHome` or
   * `session.dshEnv.DSH_HOME`); default: `$DSH_HOME` of this process, else `~/.dsh`.
   */
  dshHome?: string;
  /**
   * Make `shell` the persistent `bash` (docs/library.md): one daemon terminal per agent session, kept
   * across calls. It takes no `workdir` or `run_in_background`, so no job tools come with it.
   */
  persistent?: boolean;
  /** Persistent `bash` only: silence after which a running command is reported (default 3000 ms). */
  idleMs?: number;
  /** Persistent `bash` only: replaces the description's opening sentences. */
  persistentDescription?: string;
}

/** A session's tools, ready to register; `Shell` is the shell tool's type, as `persistent` chose it. */
export interface ShellTools<Shell extends ModelTool = ModelTool<ShellToolDetails> | PersistentShellTool> {
  /** The shell tool: `bash`, or `pwsh` on Windows; the persistent `bash` with `persistent: true`. */
  shell: Shell;
  /** Present when background runs are enabled. */
  jobOutput?: ModelTool<JobOutputDetails>;
  jobKill?: ModelTool<JobKillDetails>;
  jobList?: ModelTool<JobListDetails>;
  /** Every tool to register, shell first. */
  tools: ModelTool[];
  systemPrompt: SystemPromptSection;
  /** The `DSH_HOME` every command of the session gets. */
  dshHome: string;
  /** Stops the completion notices; the connection stays the harness's to close. */
  dispose(): void;
}

/** The shell flavour of the platform this process runs on. */
export function platformFlavor(platform: PlatformFacts = PLATFORM): ShellFlavor {
  return platform.toolName === 'pwsh' ? PWSH_FLAVOR : BASH_FLAVOR;
}

const SETTLED: ReadonlySet<JobSnapshot['status']> = new Set(['completed', 'killed', 'failed', 'lost']);

/** Opens the session when its cwd is known, and builds its tools: the persistent `bash` as `shell`. */
export async function createShellTools(
  options: ShellToolsOptions & { persistent: true },
): Promise<ShellTools<PersistentShellTool>>;
/** Opens the session when its cwd is known, and builds its tools: the one-shot shell as `shell`. */
export async function createShellTools(
  options: ShellToolsOptions & { persistent?: false },
): Promise<ShellTools<ModelTool<ShellToolDetails>>>;
/** Opens the session when its cwd is known, and builds its tools (`persistent` known only at run time). */
export async function createShellTools(options: ShellToolsOptions): Promise<ShellTools>;
export async function createShellTools(options: ShellToolsOptions): Promise<ShellTools> {
  const { client, onJobExited } = options;
  const dshHome = resolveDshHome({ session: options.session, configured: options.dshHome });
  const session: ToolSession = {
    ...options.session,
    dshHome,
    dshEnv: { ...options.session.dshEnv, DSH_HOME: dshHome },
  };
  const flavor = options.flavor ?? platformFlavor();
  const background = options.enableRunInBackground ?? client.info.capabilities.background;
  const notify = (job: JobSnapshot) => onJobExited?.({ sessionId: session.id, job, text: renderJobExited(job) });
  const subscription = client.onJobExited((params) => {
    if (params.sessionId === session.id) notify(params.job);
  });
  if (session.cwd !== undefined) {
    const opened = await client.call(SessionOpen, {
      sessionId: session.id,
      cwd: session.cwd,
      env: session.env,
      dshEnv: session.dshEnv,
      sandbox: session.sandbox && {
        ...session.sandbox,
        escalationTargets: declaredTargets(session.sandbox, options.approveEscalation),
      },
      ...(session.limits && { limits: session.limits }),
    });
    // Settlements no connection received while the harness was away.
    for (const job of opened.jobs) if (SETTLED.has(job.status) && !job.reported) notify(job);
  }
  if (options.persistent) {
    const shell = createPersistentShellTool({
      client,
      session,
      idleMs: options.idleMs,
      description: options.persistentDescription,
      ...(options.yieldMs !== undefined && { yieldMs: options.yieldMs }),
    });
    return {
      shell,
      tools: [shell] as ModelTool[],
      systemPrompt: systemPromptSection(BASH_FLAVOR),
      dshHome,
      dispose: () => subscription.dispose(),
    };
  }
  const { escalation } = argsConfigOf(session, background, options.approveEscalation);
  const shell = createShellTool({
    client,
    session,
    flavor,
    background,
    approveEscalation: options.approveEscalation,
    ...(background && options.yieldMs !== undefined && { yieldMs: options.yieldMs }),
  });
  const jobOptions = { client, sessionId: session.id, escalation };
  const jobOutput = background ? createJobOutputTool(jobOptions) : undefined;
  const jobKill = background ? createJobKillTool(jobOptions) : undefined;
  const jobList = background ? createJobListTool(jobOptions) : undefined;
  return {
    shell,
    jobOutput,
    jobKill,
    jobList,
    tools: [
      shell,
      ...(jobOutput ? [jobOutput] : []),
      ...(jobKill ? [jobKill] : []),
      ...(jobList ? [jobList] : []),
    ] as ModelTool[],
    systemPrompt: systemPromptSection(flavor, { background }),
    dshHome,
    dispose: () => subscription.dispose(),
  };
}

export { resolveWorkdir } from './workdir.js';
export { resolveDshHome } from './dsh-home.js';
export {
  createTerminalTools,
  type TerminalTools,
  type TerminalToolsOptions,
  type TerminalToolDetails,
} from './terminal-tools.js';
export type { PersistentShellTool, PersistentShellDetails } from './persistent-shell.js';
export { TERMINAL_SYSTEM_PROMPT, PERSISTENT_DESCRIPTION_HEAD } from './terminal-description.js';
export { shellArgsJsonSchema, validateShellArgs } from './args.js';
export { BASH_FLAVOR, PWSH_FLAVOR, toolDescription, systemPromptSection } from './description.js';
export { ESCALATION_TARGETS } from '../../protocol/sandbox.js';
export type { ApproveEscalation, EscalationRequest } from './escalation.js';
export * from './types.js';
export type { ShellToolDetails, JobOutputDetails, JobKillDetails, JobListDetails };
