/**
 * The terminal methods (docs/terminals.md). Every one answers TERMINALS_UNAVAILABLE when no PTY can be
 * opened here; only connections that opened a terminal's owner session may touch it.
 */
import { ExecdError } from '../../protocol/errors.js';
import {
  TerminalAttach,
  TerminalClose,
  TerminalDetach,
  TerminalList,
  TerminalOpen,
  TerminalOutput,
  TerminalRead,
  TerminalResize,
  TerminalRun,
  TerminalSend,
  TerminalSignal,
  TerminalWrite,
} from '../../protocol/methods.js';
import { performance } from 'node:perf_hooks';
import type { ClientConnection } from '../net/connection.js';
import { failedEnd, terminalRunEnd } from '../observability/command-outcome.js';
import { observedCommand } from '../observability/command-watch.js';
import { requireAdmin } from '../sessions/admin.js';
import { handler, type HandlerContext } from '../net/handler.js';
import { sessionSpillDir } from '../sessions/session-lifecycle.js';
import { recordReportedOutputs } from '../state/output-files.js';
import { openTerminal } from '../terminals/open-terminal.js';
import { runInTerminal } from '../terminals/run.js';
import { checkInputSize, sendToTerminal } from '../terminals/send.js';
import { signalForeground } from '../terminals/signal.js';
import type { Terminal, TerminalViewer } from '../terminals/terminal.js';
import type { LimitCounts } from '../limits/limit-backend.js';
import type { ProcessScopes } from '../processes/process-scopes.js';
import { configFor } from '../sessions/bound-config.js';

/** TERMINALS_UNAVAILABLE when the start-up probe found that no PTY can be opened. */
async function unavailable({ daemon }: HandlerContext): Promise<ExecdError | undefined> {
  const reason = await daemon.terminalsUnavailable;
  return reason === undefined
    ? undefined
    : new ExecdError('TERMINALS_UNAVAILABLE', `terminals are unavailable: ${reason}`);
}

/** The terminal when this connection opened `sessionId` and that session owns it. */
async function ownedTerminal(
  params: { sessionId: string; terminalId: string },
  ctx: HandlerContext,
): Promise<Terminal | ExecdError> {
  const refused = await unavailable(ctx);
  if (refused) return refused;
  const session = ctx.daemon.sessions.require(params.sessionId, ctx.conn);
  if (session instanceof ExecdError) return session;
  return ctx.daemon.terminals.require(params.terminalId, params.sessionId);
}

/** One connection's viewers, one per attached terminal. */
const viewers = new WeakMap<ClientConnection, Map<Terminal, TerminalViewer>>();

/** The viewer of `terminal` for `conn`, created on first attach and detached when the connection closes. */
function viewerFor(conn: ClientConnection, terminal: Terminal): TerminalViewer {
  let mine = viewers.get(conn);
  if (!mine) {
    const created = new Map<Terminal, TerminalViewer>();
    mine = created;
    viewers.set(conn, created);
    conn.onClose(() => {
      for (const [attached, viewer] of created) attached.detachViewer(viewer);
      created.clear();
    });
  }
  let viewer = mine.get(terminal);
  if (!viewer) {
    viewer = {
      notifyOutput: (terminalId, data, offset) => conn.notify(TerminalOutput, { terminalId, data, offset }),
      flow: conn.outputFlow,
    };
    mine.set(terminal, viewer);
  }
  return viewer;
}

/** What each terminal's limits had done by its last answer (see `withLimitNews`). */
const limitsSeen = new WeakMap<Terminal, LimitCounts>();

/**
 * An answer of a terminal with what its resource limits did since its last answer: a process the
 * kernel killed inside it for want of memory (the shell lives on), a fork its `pids` limit refused.
 */
function withLimitNews<T extends object>(result: T, terminal: Terminal, scopes: ProcessScopes): T {
  const news = scopes.limitNews(terminal.setup.ownerSession, terminal.id, limitsSeen.get(terminal));
  if (!news) return result;
  limitsSeen.set(terminal, news.counts);
  return { ...result, ...news.report };
}

/** Handlers of the terminal methods. */
export const terminalHandlers = [
  handler(TerminalOpen, async (params, ctx) => {
    const refused = await unavailable(ctx);
    if (refused) return refused;
    // In a daemon's first moments Landlock's probe may still be out: a terminal waits for it.
    await ctx.daemon.sandbox.settled;
    const session = ctx.daemon.sessions.require(params.sessionId, ctx.conn);
    if (session instanceof ExecdError) return session;
    return openTerminal(ctx.daemon, session, params);
  }),

  handler(TerminalSend, async (params, ctx) => {
    const terminal = await ownedTerminal(params, ctx);
    if (terminal instanceof ExecdError) return terminal;
    const config = configFor(ctx.daemon, params.sessionId);
    const result = await sendToTerminal(terminal, params, config, ctx.token);
    return result instanceof ExecdError ? result : withLimitNews(result, terminal, ctx.daemon.processes.scopes);
  }),

  handler(TerminalRun, async (params, ctx) => {
    const terminal = await ownedTerminal(params, ctx);
    if (terminal instanceof ExecdError) return terminal;
    const snapshot = terminal.snapshot();
    const watch = observedCommand(ctx, {
      kind: 'terminal_run',
      mode:
        terminal.setup.sandboxMode ?? ctx.daemon.sessions.get(params.sessionId)?.sandbox.mode ?? 'danger-full-access',
      sessionId: params.sessionId,
      cwd: snapshot.cwd,
      command: params.command,
      ...(params.requestKey !== undefined && { requestKey: params.requestKey }),
    });
    watch.running(snapshot.pid);
    const requested = performance.now();
    const config = configFor(ctx.daemon, params.sessionId);
    const result = await runInTerminal(terminal, params, {
      config,
      spillDir: sessionSpillDir(ctx.daemon, params.sessionId),
      token: ctx.token,
      close: (reason) => ctx.daemon.terminals.close(terminal, reason),
    });
    // The spill file it names may be paged with output/read from this session.
    const durationMs = Math.round(performance.now() - requested);
    if (result instanceof ExecdError) {
      watch.ended(failedEnd(result, durationMs));
      return result;
    }
    recordReportedOutputs(ctx.daemon, params.sessionId, [result.outputSpillPath]);
    const answer = withLimitNews(result, terminal, ctx.daemon.processes.scopes);
    watch.ended(terminalRunEnd(answer, durationMs));
    return answer;
  }),

  handler(TerminalRead, async (params, ctx) => {
    const terminal = await ownedTerminal(params, ctx);
    if (terminal instanceof ExecdError) return terminal;
    // A command that ended while nobody waited for it is collected here with its status.
    const status = terminal.waitsAtOwnPrompt() ? terminal.promptStatus : undefined;
    const exitCode = status === undefined ? {} : { exitCode: status };
    if (params.view === 'screen') {
      const end = terminal.scrollback.end;
      const text = await terminal.renderScreen().catch(() => '');
      return { text, offset: end, nextOffset: end, droppedBytes: 0, ...exitCode, terminal: terminal.snapshot() };
    }
    const maxBytes = params.maxBytes ?? configFor(ctx.daemon, params.sessionId).maxOutputBytes;
    // Without an offset: the last maxBytes of the ring.
    const offset = params.offset ?? Math.max(terminal.scrollback.start, terminal.scrollback.end - maxBytes);
    return { ...terminal.scrollback.read(offset, maxBytes), ...exitCode, terminal: terminal.snapshot() };
  }),

  handler(TerminalWrite, async (params, ctx) => {
    const terminal = await ownedTerminal(params, ctx);
    if (terminal instanceof ExecdError) return terminal;
    const config = configFor(ctx.daemon, params.sessionId);
    const bytes = Buffer.from(params.data);
    const limited = checkInputSize(terminal, bytes.length, config, 'data');
    if (limited) return limited;
    terminal.lastActivity = Date.now();
    return { written: terminal.write(bytes) ? bytes.length : 0 };
  }),

  handler(TerminalSignal, async (params, ctx) => {
    const terminal = await ownedTerminal(params, ctx);
    if (terminal instanceof ExecdError) return terminal;
    return signalForeground(terminal, params.signal);
  }),

  handler(TerminalResize, async (params, ctx) => {
    const terminal = await ownedTerminal(params, ctx);
    if (terminal instanceof ExecdError) return terminal;
    terminal.resize(params.cols, params.rows);
    return terminal.snapshot();
  }),

  handler(TerminalAttach, async (params, ctx) => {
    const terminal = await ownedTerminal(params, ctx);
    if (terminal instanceof ExecdError) return terminal;
    return { nextOffset: terminal.attachViewer(viewerFor(ctx.conn, terminal), params.offset) };
  }),

  handler(TerminalDetach, async (params, ctx) => {
    const terminal = await ownedTerminal(params, ctx);
    if (terminal instanceof ExecdError) return terminal;
    terminal.detachViewer(viewerFor(ctx.conn, terminal));
    return { nextOffset: terminal.scrollback.end };
  }),

  handler(TerminalClose, async (params, ctx) => {
    const terminal = await ownedTerminal(params, ctx);
    if (terminal instanceof ExecdError) return terminal;
    return { closed: await ctx.daemon.terminals.close(terminal, 'closed by terminal/close') };
  }),

  handler(TerminalList, async (params, ctx) => {
    const refused = await unavailable(ctx);
    if (refused) return refused;
    if ('all' in params) {
      return (
        requireAdmin(ctx.conn, 'terminal/list { all }') ??
        ctx.daemon.terminals.list().map((terminal) => terminal.snapshot())
      );
    }
    const session = ctx.daemon.sessions.require(params.sessionId, ctx.conn);
    if (session instanceof ExecdError) return session;
    return ctx.daemon.terminals.list(params.sessionId).map((terminal) => terminal.snapshot());
  }),
];
