/** `execd run -- COMMAND...`: a foreground run, streamed live, with the model's markers at the end. */
import type { UnitLimits } from '../../protocol/limits.js';
import type { OutputProgress, ShellRunResult, YieldedRunResult } from '../../protocol/types.js';
import { isYielded, type ExecdClient } from '../connection.js';
import {
  DAEMON_STOPPED_LINE,
  exitMarker,
  limitLines,
  renderResult,
  runnerFailedLine,
  sandboxDeniedLine,
  timeoutLine,
  truncationLine,
} from '../../shared/render.js';
import {
  ENDPOINT_HELP,
  ENDPOINT_OPTIONS,
  endpointOf,
  parseCommand,
  parseDuration,
  parseMs,
  type CommandRunner,
} from './args.js';
import { connectOrStart } from './autostart.js';
import { EXIT_OUTPUT_CLOSED, onOutputClosed, outputClosed } from './closed-output.js';
import { commandFromWords, commandWordsHelp } from './command-words.js';
import { ENV_HELP, parseEnvPairs } from './env-pairs.js';
import { EXIT_EXECD_ERROR, usageError } from './errors.js';
import { EXIT_TIMEOUT, signalExitCode } from './exit-codes.js';
import { stdinHasInput } from './piped-stdin.js';
import { LIMIT_OPTIONS, LIMITS_HELP, limitsOf } from './limit-flags.js';
import { SANDBOX_HELP, sandboxPolicyOf } from './sandbox-flag.js';
import { defaultWorkdir, forgetCreatedSession, openSession, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd run`. */
export const RUN_HELP = `usage: execd run [--session ID] [--workdir DIR] [--timeout MS] [--env NAME=VALUE]... [--no-stdin]
                 [--sandbox MODE] [--memory SIZE] [--cpus N] [--pids N] [--yield DURATION]
                 [--json | --render] -- COMMAND...

Runs COMMAND with bash -c in the daemon (starting the daemon if none runs). Output streams live,
byte for byte (execd run -- 'gzip -c FILE' | gunzip); at the end the lines the model's view adds
([timed out ...], the exit marker) are printed to stderr; nothing of a streamed run stays on disk.
When this shell's stdin is a pipe or a file, the command starts at once and gets it as it arrives,
byte for byte, with end-of-file when it ends (head -c 1000 /dev/urandom | execd run -- 'wc -c');
a command that does not read it ends without waiting for it; a terminal is never read.

${commandWordsHelp('run')}

${SESSION_HELP}
  --workdir DIR      working directory (default: the current directory; over EXECD_URL the session's)
  --timeout MS       timeout in milliseconds, a positive number (default: the daemon's timeoutMs)
${ENV_HELP}
${SANDBOX_HELP}
${LIMITS_HELP}
  --no-stdin         do not read stdin even when it is a pipe (the command gets an empty stdin)
  --yield DURATION   a command still running after DURATION (10s, 500ms, 2m) goes on as a
                     background job of the session: its output so far is printed, then its id
                     and how to read, wait for or kill it, and execd run exits 0. Output is
                     printed at the end, not streamed, and stdin is not read
  --json             print the ShellRunResult as JSON instead of streaming
  --render           print exactly the text the model would read, once, at the end
${ENDPOINT_HELP}

Exit code: the command's; 124 after a timeout; 128+n after signal n; 125 for an execd error;
141 when the reader of the output went away (execd run -- yes | head -2; the command is killed).
Examples:
  execd run --timeout 5000 -- 'ls -l | head'
  execd run --env DEBUG=1 -- npm test
  execd run --yield 10s -- make
`;

/** Exit code after the run was interrupted (Ctrl-C), as a shell reports SIGINT. */
const EXIT_INTERRUPTED = 130;

/** The exit code of the CLI for a run result. */
export function exitCodeOf(result: ShellRunResult): number {
  if (result.timedOut) return EXIT_TIMEOUT;
  if (result.signal) return signalExitCode(result.signal);
  return result.exitCode ?? EXIT_EXECD_ERROR;
}

/**
 * The lines the model's view adds after the output. Streamed, every byte was printed already, so
 * no truncation notice applies: only the sandbox, timeout and exit lines.
 */
export function modelSuffix(result: ShellRunResult, streamed = false): string[] {
  const lines: string[] = [];
  if (!streamed && result.stdout.truncated) lines.push(truncationLine(result.stdout));
  if (!streamed && result.stderr.truncated) lines.push(truncationLine(result.stderr));
  if (result.sandbox?.runnerFailed) lines.push(runnerFailedLine(result.sandbox.mode));
  else if (result.sandbox?.denied) lines.push(sandboxDeniedLine(result.sandbox.mode));
  if (result.timedOut) lines.push(timeoutLine(result.timeoutMs));
  if (result.daemonStopped) lines.push(DAEMON_STOPPED_LINE);
  lines.push(...limitLines(result));
  const marker = exitMarker(result);
  if (marker) lines.push(marker);
  return lines;
}

/** Writes `text` unless the output was found closed (the CLI is ending quietly). */
function write(stream: 'stdout' | 'stderr', text: string): void {
  if (!outputClosed()) process[stream].write(text);
}

/**
 * Writes streamed output to the terminal, file or pipe; when that falls behind (a slow pipe), the
 * CLI stops reading the daemon until it drained, and the daemon in turn pauses the command.
 */
function writeThrough(client: ExecdClient, stream: OutputProgress['stream'], bytes: Buffer): void {
  if (outputClosed()) return;
  const out = process[stream];
  if (out.write(bytes) || draining.has(stream)) return;
  draining.add(stream);
  client.pauseReading();
  out.once('drain', () => {
    draining.delete(stream);
    if (draining.size === 0) client.resumeReading();
  });
}

/** The output streams the CLI waits on to drain. */
const draining = new Set<'stdout' | 'stderr'>();

/** Runs `execd run`; resolves with the exit code. */
export const runCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('run', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      workdir: { type: 'string' },
      timeout: { type: 'string' },
      env: { type: 'string', multiple: true, default: [] },
      sandbox: { type: 'string' },
      ...LIMIT_OPTIONS,
      'no-stdin': { type: 'boolean', default: false },
      yield: { type: 'string' },
      json: { type: 'boolean', default: false },
      render: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length === 0) throw usageError('run', 'missing COMMAND (usage: execd run -- COMMAND...)');
  if (values.json && values.render) throw usageError('run', '--json and --render exclude each other');
  const timeoutMs = parseMs('run', '--timeout', values.timeout);
  const env = parseEnvPairs(values.env, 'run');
  const workdir = values.workdir ?? defaultWorkdir();
  const sandboxPolicy = sandboxPolicyOf(values.sandbox, workdir, 'run');
  const limits = limitsOf(values, 'run');
  const yieldMs = parseDuration('run', '--yield', values.yield);
  const client = await connectOrStart(endpointOf(values, globals));
  if (yieldMs !== undefined) {
    try {
      return await runYielding(client, positionals, { ...values, timeoutMs, env, yieldMs, limits });
    } finally {
      client.close();
    }
  }
  try {
    const input = values['no-stdin'] || !stdinHasInput() ? undefined : process.stdin;
    const command = commandFromWords(positionals, client.info.capabilities.shell);
    const created = await openSession(client, values.session);
    const controller = new AbortController();
    process.once('SIGINT', () => controller.abort());
    const streaming = !values.json && !values.render;
    const running = client.run(
      { sessionId: values.session, command, workdir, timeoutMs, env, sandboxPolicy, ...(limits && { limits }) },
      {
        signal: controller.signal,
        input,
        ...(streaming && { onBytes: (stream, bytes) => writeThrough(client, stream, bytes), keepCapture: false }),
      },
    );
    // Nobody reads the output any more: kill the command (its answer says aborted) before exiting.
    const forget = onOutputClosed(() => {
      // Reading may be paused for a full pipe: the abort's answer must still arrive.
      draining.clear();
      client.resumeReading();
      controller.abort();
      return running;
    });
    let result: ShellRunResult;
    try {
      result = await running;
    } catch (error) {
      if (created) await forgetCreatedSession(client, values.session, error);
      throw error;
    } finally {
      forget();
      // A stdin that never closes (inherited from a parent) must not keep the CLI alive.
      input?.destroy();
    }
    if (outputClosed()) return EXIT_OUTPUT_CLOSED;
    if (values.json) write('stdout', `${JSON.stringify(result, null, 2)}\n`);
    else if (values.render) {
      const text = renderResult(result);
      write('stdout', text.endsWith('\n') ? text : `${text}\n`);
    } else {
      const suffix = modelSuffix(result, true);
      if (suffix.length > 0) write('stderr', `${suffix.join('\n')}\n`);
    }
    return result.aborted && !result.daemonStopped ? EXIT_INTERRUPTED : exitCodeOf(result);
  } finally {
    client.close();
  }
};

/** The notice of a run that yielded: its job, and the commands that go on with it. */
export function yieldedLine(result: YieldedRunResult): string {
  const id = result.jobId;
  return `[still running as background job ${id} (pid ${result.pid}) after ${result.durationMs} ms: execd read ${id} | execd wait ${id} | execd kill ${id}]`;
}

/** What `execd run --yield` needs besides the client. */
interface YieldingOptions {
  session: string;
  workdir?: string;
  timeoutMs: number | undefined;
  env: Record<string, string> | undefined;
  yieldMs: number;
  json: boolean;
  render: boolean;
  limits: UnitLimits | undefined;
}

/**
 * `execd run --yield`: not streamed (the command runs as a job of the session from its start).
 * A run that ended prints as `--json`/`--render` or its output then its lines; one that yielded
 * prints its output so far and the job's notice, and exits 0.
 */
async function runYielding(client: ExecdClient, words: string[], options: YieldingOptions): Promise<number> {
  const command = commandFromWords(words, client.info.capabilities.shell);
  const created = await openSession(client, options.session);
  const controller = new AbortController();
  const interrupt = () => controller.abort();
  process.once('SIGINT', interrupt);
  let result: ShellRunResult | YieldedRunResult;
  try {
    result = await client.run(
      {
        sessionId: options.session,
        command,
        workdir: options.workdir ?? defaultWorkdir(),
        timeoutMs: options.timeoutMs,
        env: options.env,
        yieldMs: options.yieldMs,
        ...(options.limits && { limits: options.limits }),
      },
      { signal: controller.signal },
    );
  } catch (error) {
    if (created) await forgetCreatedSession(client, options.session, error);
    throw error;
  } finally {
    process.removeListener('SIGINT', interrupt);
  }
  if (options.json) {
    write('stdout', `${JSON.stringify(result, null, 2)}\n`);
    return isYielded(result) ? 0 : exitCodeOf(result);
  }
  if (isYielded(result)) {
    write('stdout', result.stdout.text);
    write('stderr', result.stderr.text);
    write('stderr', `${yieldedLine(result)}\n`);
    return 0;
  }
  if (options.render) {
    const text = renderResult(result);
    write('stdout', text.endsWith('\n') ? text : `${text}\n`);
  } else {
    write('stdout', result.stdout.text);
    write('stderr', result.stderr.text);
    const suffix = modelSuffix(result);
    if (suffix.length > 0) write('stderr', `${suffix.join('\n')}\n`);
  }
  return result.aborted && !result.daemonStopped ? EXIT_INTERRUPTED : exitCodeOf(result);
}
