/**
 * `execd mcp`: a Model Context Protocol server over stdio (docs/mcp.md) exposing the session's tools —
 * `bash`, `job_output`, `job_kill`, … — with the library's descriptions, schemas and rendered text,
 * through a daemon it connects to or starts. Background-job completions reach the MCP client as
 * logging notifications. The server exits when its stdin closes; the session and its jobs stay in
 * the daemon (a restarted agent reattaches), and an idle session is closed by the daemon in time.
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ExecdClient } from '../connection.js';
import { createShellTools, createTerminalTools, type ShellTools, type TerminalTools } from '../tool/index.js';
import type { ModelTool } from '../tool/types.js';
import { createToolServer } from '../mcp/server.js';
import { refuseStart } from '../mcp/refuse-start.js';
import { BoundedStdioTransport } from '../mcp/stdio-transport.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { connectOrStart } from './autostart.js';
import { CliError, usageError } from './errors.js';
import { LIMIT_OPTIONS, sessionLimitsOf } from './limit-flags.js';
import { MAX_YIELD_MS } from '../../protocol/methods.js';
import { mcpSessionId } from './mcp-session.js';

/** Help text of `execd mcp`. */
export const MCP_HELP = commandHelp({
  usage:
    'mcp [--session ID] [--workdir DIR] [--persistent] [--terminals] [--yield-ms N]\n' +
    '                 [--memory SIZE] [--session-memory SIZE] [--cpus N] [--pids N]',
  about: `Serves the model-facing tools (bash, job_output, job_kill, job_list; with --persistent the bash
of one persistent shell instead; with --terminals also terminal_open, terminal_send, terminal_read,
terminal_signal, terminal_close, terminal_list) as a Model Context Protocol server on
stdin/stdout, through the daemon (started in the background when none runs). Every command runs in
the daemon session ID with DIR as its working directory (default: the current directory); without
--session the server has its own session, mcp-<dir name>-<hash of DIR>, named in its first line on
stderr. Background-job completions are sent as MCP logging notifications. Exits when stdin closes.`,
  options: [
    '  --session ID       the daemon session of the tools (default: mcp-<dir name>-<hash>, from DIR)',
    '  --workdir DIR      the session working directory (default: the current directory)',
    '  --persistent       bash is one persistent shell (cd, exports and functions stay)',
    '  --terminals        add the terminal tools (interactive programs, persistent terminals)',
    '  --yield-ms N       a command still going after N ms answers with its output so far and goes on:',
    '                     with --persistent in the shell (the next bash call shows the rest), else as a job',
    '  --memory SIZE      memory limit of each command of the session (512M, 2G); the model cannot change it',
    "  --session-memory SIZE  memory limit of all the session's commands together",
    '  --cpus N           CPU limit of each command, a fraction of CPUs (0.5: half of one core)',
    '  --pids N           processes and threads each command may have at once',
  ],
  examples: ['claude mcp add execd -- execd mcp --workdir "$PWD"'],
});

/**
 * Fails at start for a working directory every later call would fail on (the daemon is local to
 * it, or a remote daemon checks its own when the session opens).
 */
async function requireDirectory(cwd: string): Promise<void> {
  if (process.env.EXECD_URL) return;
  const found = await stat(cwd).catch(() => undefined);
  if (!found) throw new Error(`workdir ${cwd} does not exist`);
  if (!found.isDirectory()) throw new Error(`workdir ${cwd} is not a directory`);
}

/**
 * `--yield-ms N`: the harness's `yieldMs` of the `bash` tool, checked here against the daemon's
 * bounds so that a wrong value stops the start rather than every call.
 */
function yieldMsOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 1 || ms > MAX_YIELD_MS)
    throw usageError(
      'mcp',
      `--yield-ms must be a whole number of milliseconds between 1 and ${MAX_YIELD_MS}, got ${JSON.stringify(value)}`,
    );
  return ms;
}

/** Runs `execd mcp` until stdin closes; a failure to start answers the MCP client and exits non-zero. */
export const mcpCommand: CommandRunner = async (argv, globals) => {
  const { values } = parseCommand('mcp', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      session: { type: 'string' },
      workdir: { type: 'string' },
      persistent: { type: 'boolean', default: false },
      terminals: { type: 'boolean', default: false },
      'yield-ms': { type: 'string' },
      ...LIMIT_OPTIONS,
      'session-memory': { type: 'string' },
    },
    allowPositionals: false,
    strict: true,
  });
  const cwd = resolve(values.workdir ?? process.cwd());
  // The harness's limits for the session's commands; the model's tool schema has no such field.
  const limits = sessionLimitsOf(values, 'mcp');
  const yieldMs = yieldMsOf(values['yield-ms']);
  const session = { id: values.session ?? mcpSessionId(cwd), cwd, ...(limits && { limits }) };
  // stdout is the MCP channel; the startup line goes to stderr, where MCP clients log it.
  process.stderr.write(`execd mcp: session ${session.id} (cwd ${cwd})\n`);
  // Notices of jobs that settled while no agent was connected arrive while the tools are built,
  // before the server exists: they wait for it.
  const notices: string[] = [];
  let server: Server | undefined;
  const tell = (text: string) => {
    // A client that has gone cannot be told; nothing else depends on the notice.
    server?.sendLoggingMessage({ level: 'info', logger: 'execd', data: text }).catch(() => undefined);
  };
  let client: ExecdClient | undefined;
  let shellTools: ShellTools | undefined;
  let terminalTools: TerminalTools | undefined;
  try {
    await requireDirectory(cwd);
    // Long-lived: a dropped link or a restarted daemon is dialed again, keyed tool calls re-sent (docs/reconnect.md).
    client = await connectOrStart(endpointOf(values, globals), { clientName: 'execd-cli', reconnect: true });
    shellTools = await createShellTools({
      client,
      session,
      persistent: values.persistent,
      ...(yieldMs !== undefined && { yieldMs }),
      onJobExited: (notice) => (server ? tell(notice.text) : notices.push(notice.text)),
    });
    // The session is open on this connection now; the terminal tools use it as it is.
    if (values.terminals) terminalTools = await createTerminalTools({ client, session: { id: session.id } });
  } catch (error) {
    // Nothing may be left holding the process (a reconnecting client dials on for good): the MCP
    // client's pending `initialize` is answered with the reason, and the server exits non-zero.
    shellTools?.dispose();
    client?.close();
    const reason = `execd mcp: ${error instanceof Error ? error.message : String(error)}`;
    await refuseStart(reason);
    throw new CliError(reason);
  }
  const tools: ModelTool[] = [...shellTools.tools, ...(terminalTools?.tools ?? [])];
  const instructions = [shellTools.systemPrompt, ...(terminalTools ? [terminalTools.systemPrompt] : [])]
    .map((section) => section.text)
    .join('\n\n');
  let stopped!: () => void;
  const done = new Promise<void>((resolveDone) => (stopped = resolveDone));
  const transport = new BoundedStdioTransport();
  server = createToolServer({ name: 'execd', version: client.info.daemon.version }, tools, instructions);
  transport.onclose = stopped;
  process.stdin.once('end', stopped);
  client.onClose(stopped);
  await server.connect(transport);
  for (const text of notices.splice(0)) tell(text);
  await done;
  shellTools.dispose();
  terminalTools?.dispose();
  client.close();
  await server.close().catch(() => undefined);
  return 0;
};
