/**
 * What the model is told about the shell tool (docs/library.md): one description per shell flavour
 * (`bash` on POSIX, `pwsh` on Windows), assembled from the deployment's options, and the
 * system-prompt section.
 */
import type { SandboxPolicy } from '../../protocol/sandbox.js';
import { widerTargets } from './escalation.js';
import type { SystemPromptSection } from './types.js';

/** The facts of a shell that its tool description depends on. */
export interface ShellFlavor {
  /** The tool's name, which is also the shell's. */
  name: 'bash' | 'pwsh';
  /** One sentence saying how a command runs. */
  invocation: string;
  /** How to reach a managed variable in this shell's syntax. */
  envVar(name: string): string;
  /** Syntax notes specific to the shell. */
  syntax: string[];
}

/** `bash -c`, on POSIX. */
export const BASH_FLAVOR: ShellFlavor = {
  name: 'bash',
  invocation: 'Runs a command with `bash -c <command>` and returns its output.',
  envVar: (name) => `$${name}`,
  syntax: [
    'Use bash syntax. To feed input to a command, use a pipe or a heredoc; stdin is empty.',
    'To look into a long file, use `grep`, `head`, `tail` or `sed -n` rather than printing all of it.',
  ],
};

/** `pwsh -Command`, on Windows. */
export const PWSH_FLAVOR: ShellFlavor = {
  name: 'pwsh',
  invocation:
    'Runs a command with PowerShell (`pwsh -NoProfile -NonInteractive -Command <command>`) and returns its output.',
  envVar: (name) => `$env:${name}`,
  syntax: [
    'Use PowerShell syntax, not bash: `;` separates statements, `$env:NAME` reads an environment variable, ' +
      '`Get-ChildItem`, `Get-Content`, `Select-String` list, read and search files. ' +
      'To feed input to a command, pipe a string into it; stdin is empty.',
    'To look into a long file, use `Get-Content -Tail N` or `Select-String` rather than printing all of it.',
    'End with `exit $LASTEXITCODE` after a native program when its exit code matters.',
  ],
};

/** What the description depends on besides the shell. */
export interface DescriptionOptions {
  background: boolean;
  /** The session's sandbox policy when one confines commands. */
  sandbox?: SandboxPolicy;
  /** Whether `sandbox_permissions` is offered. */
  escalation: boolean;
}

function sandboxLines(flavor: ShellFlavor, sandbox: SandboxPolicy, escalation: boolean): string[] {
  const scope =
    sandbox.mode === 'read-only'
      ? 'every write outside a private temporary directory is denied'
      : `writes are allowed only under ${sandbox.workspaceRoot ?? 'the workspace root'} and a private temporary directory`;
  const lines = [
    `- Commands run in a file sandbox in ${sandbox.mode} mode: ${scope}. A command that hit a denied write ` +
      `ends with \`[sandbox: file access denied under ${sandbox.mode} mode]\` before its exit marker. ` +
      'The sandbox governs file access only.',
  ];
  if (escalation) {
    const targets = widerTargets(sandbox.mode).join(' or ');
    lines.push(
      `- When a command really needs wider file access, call ${flavor.name} again with \`sandbox_permissions\` ` +
        `(${targets}) and a one-sentence \`justification\`. The user is asked to approve; a refused request ` +
        'runs nothing. Do not ask for escalation to work around a mistake.',
    );
  }
  return lines;
}

/** The tool description for a shell flavour and deployment. */
export function toolDescription(flavor: ShellFlavor, options: DescriptionOptions): string {
  const lines = [
    flavor.invocation,
    '',
    '- Each call is a fresh shell: no working directory, variables or functions persist between calls. ' +
      'Do not `cd`; pass `workdir` instead (a relative path resolves against the session working directory).',
    '- `description` (required): what the command does in 5-10 words, shown to the user.',
    '- `timeoutMs`: the deployment sets the default and the maximum. A command that runs longer is killed, ' +
      'and the result shows `[timed out after <timeoutMs>ms]`.',
    '- The result is stdout, then stderr after a `[stderr]` line, or `(no output)`. A non-zero exit ends the ' +
      'result with `[exit code: N]`, a kill with `[killed by signal: NAME]`; no marker means exit code 0.',
    `- Every variable of the managed \`${flavor.envVar('DSH_*')}\` namespace carries a fact from the harness ` +
      `(e.g. \`${flavor.envVar('DSH_SESSION_ID')}\` the session, \`${flavor.envVar('DSH_HOME')}\` its home directory, ` +
      `\`${flavor.envVar('DSH_SESSION_JSONL')}\` its transcript when there is one); read them, do not set or export ` +
      `any \`${flavor.envVar('DSH_*')}\` variable yourself.`,
    '- Long output is truncated to its tail, and the full output is saved to a file named in ' +
      '`[output truncated; full output: <path>]`: read that file instead of running the command again.',
    ...flavor.syntax.map((line) => `- ${line}`),
  ];
  if (options.background) {
    lines.push(
      '- `run_in_background: true` starts the command as a background job and returns ' +
        '`started background job <id>` at once. Background jobs have no timeout. `job_output` returns what ' +
        'the job printed since the last read; to wait for its next output, pass `wait_ms` (up to 30000) ' +
        'instead of calling it again and again. `job_list` lists your jobs; `job_kill` stops one. You are ' +
        'told when a job finishes. Use it for servers and watchers, not to wait on a command that ends.',
    );
  }
  if (options.sandbox) lines.push(...sandboxLines(flavor, options.sandbox, options.escalation));
  return lines.join('\n');
}

/** The system-prompt sentence about waiting on background jobs, present when they are enabled. */
export const WAIT_PROMPT =
  'To wait for a background job, call job_output with wait_ms (up to 30000) rather than polling it or running sleep.';

/** The system-prompt section of a shell tool (docs/library.md); with background jobs, one sentence on waiting. */
export function systemPromptSection(flavor: ShellFlavor, options: { background?: boolean } = {}): SystemPromptSection {
  const check = `Check the [exit code: N] marker on every ${flavor.name} result; investigate failures before moving on.`;
  return {
    name: `tool:${flavor.name}`,
    order: 105,
    text: options.background ? `${check} ${WAIT_PROMPT}` : check,
  };
}

/** The description of `job_output`. */
export const JOB_OUTPUT_DESCRIPTION =
  'Returns what a background job printed since the last read (each read returns only new output), then its ' +
  'state, e.g. `[job bash-3: running]`; once it finished, its exit marker follows as for a foreground call. ' +
  'With `wait_ms` (at most 30000), when nothing new is there yet it waits until output arrives, the job ' +
  'ends, or `wait_ms` passes: use it to wait for a server to come up or a build to progress, rather than ' +
  'calling job_output in a loop or running `sleep`. With `wait_for` it first waits until the output matches ' +
  '`wait_for.output` (a regular expression), `wait_for.port` accepts TCP connections on localhost, or ' +
  '`wait_for.path` exists (or the job ends, or `wait_ms` passes, default 30000): start a dev server, then wait ' +
  'for its port in one call. ' +
  'If the reader fell behind, `[some output was dropped from memory; full output: <paths>]` names files that ' +
  'hold everything.';

/** The description of `job_list`. */
export const JOB_LIST_DESCRIPTION =
  "Lists this session's background jobs, one line each: id, status (running, completed, killed, failed, lost), " +
  'exit facts (e.g. `exit code: 0`) and command. Use it to find a job id again or to see which jobs still run.';

/** The description of `job_kill`. */
export const JOB_KILL_DESCRIPTION =
  'Stops a background job and everything it started; returns once the processes are gone.';
