/** `execd run -- COMMAND...`: a foreground run, streamed live, with the model's markers at the end. */
import { parseArgs } from 'node:util';
import { SessionOpen } from '../../protocol/methods.js';
import type { ShellRunResult } from '../../protocol/types.js';
import { connect } from '../connection.js';
import { exitMarker, renderResult, sandboxDeniedLine, timeoutLine, truncationLine } from '../render.js';
import { CliError } from './errors.js';
import { constants as os } from 'node:os';

/** Help text of `execd run`. */
export const RUN_HELP = `usage: execd run [--session ID] [--workdir DIR] [--timeout MS] [--json | --render] -- COMMAND...

Runs COMMAND with bash -c in the daemon. Output streams live; at the end the lines the model's view
adds (truncation notices, [timed out after ...], the exit marker) are printed to stderr.

  --session ID     session to run in (default: cli)
  --workdir DIR    working directory (default: the current directory)
  --timeout MS     timeout in milliseconds (default: the daemon's timeoutMs)
  --json           print the ShellRunResult as JSON instead of streaming
  --render         print exactly the text the model would read, once, at the end

Exit code: the command's; 124 after a timeout; 128+n after signal n; 125 for an execd error.
`;

/** The exit code of the CLI for a run result. */
export function exitCodeOf(result: ShellRunResult): number {
  if (result.timedOut) return 124;
  if (result.signal) return 128 + (os.signals[result.signal as keyof typeof os.signals] ?? 0);
  return result.exitCode ?? 125;
}

/** The lines the model's view adds after the output, for the streaming mode. */
export function modelSuffix(result: ShellRunResult): string[] {
  const lines: string[] = [];
  if (result.stdout.truncated) lines.push(truncationLine(result.stdout));
  if (result.stderr.truncated) lines.push(truncationLine(result.stderr));
  if (result.sandbox?.denied) lines.push(sandboxDeniedLine(result.sandbox.mode));
  if (result.timedOut) lines.push(timeoutLine(result.timeoutMs));
  const marker = exitMarker(result);
  if (marker) lines.push(marker);
  return lines;
}

/** Runs `execd run`; resolves with the exit code. */
export async function runCommand(argv: string[], common: { socketPath?: string; stateDir?: string }): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      session: { type: 'string', default: 'cli' },
      workdir: { type: 'string' },
      timeout: { type: 'string' },
      json: { type: 'boolean', default: false },
      render: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length === 0) throw new CliError('execd run: missing COMMAND (usage: execd run -- COMMAND...)');
  if (values.json && values.render) throw new CliError('execd run: --json and --render exclude each other');
  const timeoutMs = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new CliError(`execd run: --timeout must be a positive number of milliseconds, got ${JSON.stringify(values.timeout)}`);
  }
  const command = positionals.join(' ');
  const client = await connect({ ...common, clientName: 'execd-cli' });
  try {
    await client.call(SessionOpen, { sessionId: values.session!, cwd: process.cwd() });
    const controller = new AbortController();
    process.once('SIGINT', () => controller.abort());
    const streaming = !values.json && !values.render;
    const result = await client.run(
      { sessionId: values.session!, command, workdir: values.workdir ?? process.cwd(), timeoutMs },
      {
        signal: controller.signal,
        onOutput: streaming ? ({ stream, text }) => process[stream].write(text) : undefined,
      },
    );
    if (values.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else if (values.render) process.stdout.write(renderResult(result));
    else {
      const suffix = modelSuffix(result);
      if (suffix.length > 0) process.stderr.write(`${suffix.join('\n')}\n`);
    }
    return result.aborted ? 130 : exitCodeOf(result);
  } finally {
    client.close();
  }
}
