/**
 * The terminal tools (docs/library.md): `terminal_open`, `terminal_send`, `terminal_read`,
 * `terminal_signal`, `terminal_close`, `terminal_list` — thin over the daemon's `terminal/*`
 * methods, with bounded text results that end in a readiness or state line.
 */
import {
  SessionOpen,
  TerminalClose,
  TerminalExited,
  TerminalList,
  TerminalOpen,
  TerminalRead,
  TerminalSend,
  TerminalSignal,
} from '../../protocol/methods.js';
import type { TerminalSendResult, TerminalSnapshot } from '../../protocol/terminal.js';
import { formatTable } from '../table.js';
import { ExecdRpcError, type ExecdClient } from '../connection.js';
import {
  plainTerminalText,
  readinessOf,
  renderTerminalRead,
  renderTerminalSend,
  terminalStateLine,
} from '../terminal-render.js';
import { jsonSchemaOf } from './args.js';
import { callFailure, throwIfAborted, type CallFailure } from './failure.js';
import { DEFAULT_IDLE_MS } from './persistent-shell.js';
import { TERMINAL_SYSTEM_PROMPT, TERMINAL_TOOL_DESCRIPTIONS } from './terminal-description.js';
import {
  terminalArgsSchemas,
  validateTerminalArgs,
  type TerminalArgs,
  type TerminalToolName,
} from './terminal-args.js';
import type { ExecuteOptions, ModelTool, SystemPromptSection, ToolResult, ToolSession } from './types.js';
import { resolveWorkdir } from './workdir.js';

/** What the terminal tools are built from. */
export interface TerminalToolsOptions {
  /** A connected client (see `connect`). */
  client: ExecdClient;
  /**
   * The agent session. With a `cwd`, the session is opened (or reattached) in the daemon; without
   * one, the harness must already have opened it on this client.
   */
  session: ToolSession;
  /** Silence after which a send reports "not proven ready" (default 3000 ms). */
  idleMs?: number;
  /** Receives the snapshot when one of the session's terminals exits. */
  onTerminalExited?: (terminal: TerminalSnapshot) => void;
}

/** The structured facts of a terminal tool call. */
export type TerminalToolDetails =
  | { kind: 'open'; terminal: TerminalSnapshot; motd: string }
  | { kind: 'send'; result: TerminalSendResult }
  | { kind: 'read'; view: 'stream' | 'screen'; text: string; droppedBytes: number; terminal: TerminalSnapshot }
  | { kind: 'signal'; delivered: boolean; pgid: number | null }
  | { kind: 'close'; closed: boolean }
  | { kind: 'list'; terminals: TerminalSnapshot[] }
  | { kind: 'invalid'; message: string }
  | CallFailure;

/** The terminal tools of a session, ready to register. */
export interface TerminalTools {
  /** The six tools, in the order above. */
  tools: ModelTool<TerminalToolDetails>[];
  /** The `tool:terminal` section. */
  systemPrompt: SystemPromptSection;
  /** Stops the exit notices; terminals keep running (they belong to the daemon session). */
  dispose(): void;
}

/** One line per terminal, or `(no terminals)`. */
export function renderTerminalList(terminals: TerminalSnapshot[]): string {
  if (terminals.length === 0) return '(no terminals)';
  const rows = terminals.map((terminal) => [
    terminal.id,
    terminal.status === 'running' ? 'running' : terminalStateLine(terminal).slice(1, -1),
    terminal.foreground?.command ?? terminal.argv.join(' '),
    terminal.cwd,
    terminal.name ?? '',
  ]);
  return formatTable(['id', 'state', 'program', 'cwd', 'name'], rows).trimEnd();
}

/**
 * Attaches to the session when it exists — as the shell tools opened it, with their `DSH_HOME` and
 * escalation targets — else creates it with the session's facts.
 */
async function openOrAttach(client: ExecdClient, session: ToolSession & { cwd: string }): Promise<void> {
  try {
    await client.call(SessionOpen, { sessionId: session.id });
    return;
  } catch (error) {
    if (!(error instanceof ExecdRpcError && error.errorName === 'SESSION_NOT_FOUND')) throw error;
  }
  await client.call(SessionOpen, {
    sessionId: session.id,
    cwd: session.cwd,
    env: session.env,
    dshEnv: session.dshEnv,
    sandbox: session.sandbox,
    ...(session.limits && { limits: session.limits }),
  });
}

/** Opens (or attaches to) the session when its cwd is known, and builds its terminal tools. */
export async function createTerminalTools(options: TerminalToolsOptions): Promise<TerminalTools> {
  const { client, session } = options;
  const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  const sessionId = session.id;
  if (session.cwd !== undefined) await openOrAttach(client, { ...session, cwd: session.cwd });
  /** Per terminal, the stream offset up to which the model has seen the output. */
  const seen = new Map<string, number>();
  const subscription = client.onNotification(TerminalExited, (params) => {
    if (params.sessionId === sessionId) options.onTerminalExited?.(params.terminal);
  });

  const handlers: {
    [N in TerminalToolName]: (args: TerminalArgs[N], signal?: AbortSignal) => Promise<ToolResult<TerminalToolDetails>>;
  } = {
    async terminal_open(args, signal) {
      const { terminal, motd } = await client.call(
        TerminalOpen,
        { sessionId, name: args.name, argv: args.argv, cwd: resolveWorkdir(args.workdir, session) },
        { signal },
      );
      seen.set(terminal.id, terminal.outputBytes);
      const opened = `[terminal ${terminal.id} opened: ${terminal.argv.join(' ')} in ${terminal.cwd}]`;
      const first = plainTerminalText(motd);
      const text = first.length > 0 ? `${first}${first.endsWith('\n') ? '' : '\n'}${opened}` : opened;
      return { text, isError: false, details: { kind: 'open', terminal, motd } };
    },
    async terminal_send(args, signal) {
      const result = await client.call(
        TerminalSend,
        {
          sessionId,
          terminalId: args.terminal_id,
          text: args.text,
          submit: args.submit ?? true,
          idleMs,
          timeoutMs: args.timeout_ms,
        },
        { signal },
      );
      seen.set(args.terminal_id, result.cursor);
      // The daemon names the timeout it applied.
      const readiness = readinessOf(result, idleMs, result.timeoutMs);
      const output = plainTerminalText(result.output);
      const text = renderTerminalSend({
        output,
        truncated: result.truncated,
        readiness,
        exitCode: result.exitCode,
        limits: result,
      });
      return { text, isError: false, details: { kind: 'send', result } };
    },
    async terminal_read(args, signal) {
      const view = args.view ?? 'stream';
      const read = await client.call(
        TerminalRead,
        {
          sessionId,
          terminalId: args.terminal_id,
          view,
          offset: view === 'stream' ? (seen.get(args.terminal_id) ?? 0) : undefined,
        },
        { signal },
      );
      if (view === 'stream') seen.set(args.terminal_id, read.nextOffset);
      let text = renderTerminalRead({
        view,
        text: read.text,
        droppedBytes: read.droppedBytes,
        terminal: read.terminal,
      });
      if (view === 'stream' && read.nextOffset < read.terminal.outputBytes)
        text = text.replace(/\n?(\[[^\n]*\])$/, '\n[more output follows: call terminal_read again]\n$1');
      return {
        text,
        isError: false,
        details: { kind: 'read', view, text: read.text, droppedBytes: read.droppedBytes, terminal: read.terminal },
      };
    },
    async terminal_signal(args, signal) {
      const { delivered, pgid } = await client.call(
        TerminalSignal,
        { sessionId, terminalId: args.terminal_id, signal: args.signal },
        { signal },
      );
      const text = delivered
        ? `sent ${args.signal} to the foreground process group ${pgid} of ${args.terminal_id}`
        : `${args.signal} was not delivered: ${args.terminal_id} has no running program`;
      return { text, isError: false, details: { kind: 'signal', delivered, pgid } };
    },
    async terminal_close(args, signal) {
      const { closed } = await client.call(TerminalClose, { sessionId, terminalId: args.terminal_id }, { signal });
      seen.delete(args.terminal_id);
      const text = closed ? `closed terminal ${args.terminal_id}` : `terminal ${args.terminal_id} had already exited`;
      return { text, isError: false, details: { kind: 'close', closed } };
    },
    async terminal_list(_args, signal) {
      const terminals = await client.call(TerminalList, { sessionId }, { signal });
      return { text: renderTerminalList(terminals), isError: false, details: { kind: 'list', terminals } };
    },
  };

  const tool = <N extends TerminalToolName>(name: N): ModelTool<TerminalToolDetails> => ({
    name,
    description: TERMINAL_TOOL_DESCRIPTIONS[name],
    inputSchema: jsonSchemaOf(terminalArgsSchemas()[name]),
    async execute(raw: unknown, { signal }: ExecuteOptions = {}) {
      throwIfAborted(signal);
      const validated = validateTerminalArgs(name, raw);
      if (!validated.ok)
        return { text: validated.message, isError: true, details: { kind: 'invalid', message: validated.message } };
      try {
        const result = await handlers[name](validated.args, signal);
        throwIfAborted(signal);
        return result;
      } catch (error) {
        throwIfAborted(signal);
        return callFailure(error);
      }
    },
  });

  const names: TerminalToolName[] = [
    'terminal_open',
    'terminal_send',
    'terminal_read',
    'terminal_signal',
    'terminal_close',
    'terminal_list',
  ];
  return {
    tools: names.map(tool),
    systemPrompt: TERMINAL_SYSTEM_PROMPT,
    dispose: () => subscription.dispose(),
  };
}
