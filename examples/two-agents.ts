/**
 * Two agent sessions with different working directories sharing one daemon through the
 * model-facing tool, printing exactly what each model would read.
 *
 *   npm run build && node dist/examples/two-agents.js
 *
 * The example starts its own daemon in this process, on a temporary socket and state dir, and
 * removes everything when it is done. Set EXECD_SOCKET and EXECD_STATE_DIR to use a running daemon
 * (`npm run serve`) instead.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '../client/connect.js';
import { createShellTools, type ShellTools } from '../client/tool/index.js';
import { createLogger } from '../daemon/log/logger.js';
import { startDaemon, type RunningDaemon } from '../daemon/server.js';

/** Runs one tool call and prints the call and what the model reads. */
async function show(agent: string, tools: ShellTools, args: Record<string, unknown>): Promise<void> {
  const result = await tools.shell.execute(args);
  console.log(`--- ${agent} calls ${tools.shell.name} ${JSON.stringify(args)}`);
  console.log(`${result.text}${result.isError ? '\n(isError)' : ''}\n`);
}

/** Starts a background job and reads it with `job_output` until it has finished. */
async function showBackground(tools: ShellTools): Promise<void> {
  if (!tools.jobOutput) return;
  const args = {
    command: 'for i in 1 2 3; do echo tick $i; sleep 0.2; done',
    description: 'Tick in the background',
    run_in_background: true,
  };
  const started = await tools.shell.execute(args);
  console.log(`--- parent calls ${tools.shell.name} ${JSON.stringify(args)}\n${started.text}\n`);
  if (started.details.kind !== 'background') return;
  const { jobId } = started.details;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const read = await tools.jobOutput.execute({ job_id: jobId });
    console.log(`--- parent calls job_output {"job_id":"${jobId}"}\n${read.text}\n`);
    if (read.isError || !read.text.includes(`[job ${jobId}: running]`)) return;
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'execd-example-'));
  let daemon: RunningDaemon | undefined;
  let endpoint = { socketPath: process.env.EXECD_SOCKET ?? '', stateDir: process.env.EXECD_STATE_DIR ?? '' };
  if (!endpoint.socketPath || !endpoint.stateDir) {
    endpoint = { socketPath: join(dir, 'run', 'execd.sock'), stateDir: join(dir, 'state') };
    daemon = await startDaemon({ ...endpoint, log: createLogger('warn', { kind: 'stderr' }) });
  }
  const [cwdA, cwdB] = [join(dir, 'parent-agent'), join(dir, 'subagent')];
  mkdirSync(join(cwdA, 'src'), { recursive: true });
  mkdirSync(cwdB);
  writeFileSync(join(cwdA, 'src', 'main.ts'), 'console.log("hi");\n');

  // Each harness process would have its own connection; both reach the same daemon.
  const clientA = await connect({ ...endpoint, clientName: 'example-parent' });
  const clientB = await connect({ ...endpoint, clientName: 'example-subagent' });
  try {
    const parent = await createShellTools({
      client: clientA,
      session: { id: 'parent-agent', cwd: cwdA, dshEnv: { DSH_HOME: join(dir, 'home') } },
      onJobExited: (notice) => console.log(`(parent harness notified: ${notice.text})\n`),
    });
    const sub = await createShellTools({ client: clientB, session: { id: 'subagent', cwd: cwdB } });
    console.log(`system prompt section ${parent.systemPrompt.name} (order ${parent.systemPrompt.order}):`);
    console.log(`${parent.systemPrompt.text}\n`);

    await Promise.all([
      show('parent', parent, {
        command: 'pwd; echo "session $DSH_SESSION_ID"',
        description: 'Show where this agent runs',
      }),
      show('subagent', sub, {
        command: 'pwd; echo "session $DSH_SESSION_ID"',
        description: 'Show where this agent runs',
      }),
    ]);
    await show('parent', parent, { command: 'ls', description: 'List the source folder', workdir: 'src' });
    await show('subagent', sub, { command: 'ls missing-file', description: 'List a file that does not exist' });
    await show('subagent', sub, { command: 'echo building; sleep 5', description: 'Build too slowly', timeoutMs: 300 });
    await show('parent', parent, {
      command: 'printf "step one\\n[exit code: 1]"',
      description: 'Print a marker lookalike',
    });
    await show('parent', parent, { command: '', description: 'Run nothing' });
    await showBackground(parent);
  } finally {
    clientA.close();
    clientB.close();
    await daemon?.shutdown('example done');
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
