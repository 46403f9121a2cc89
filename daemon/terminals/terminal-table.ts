/**
 * The daemon's terminals (docs/terminals.md): ids that are never reused, ownership by session, the
 * journal, the clean-up when a program exits or a terminal is closed, and the idle close.
 */
import { ExecdError } from '../../protocol/errors.js';
import { TerminalExited } from '../../protocol/methods.js';
import type { Logger } from '../log/logger.js';
import type { ProcessRegistry, TrackedGroup } from '../processes/process-registry.js';
import type { SessionTable } from '../sessions/sessions.js';
import { killRecoveredTerminal, TERMINAL_SIGNALS, terminalSession } from './kill-terminal.js';
import { terminate } from '../processes/terminate.js';
import { Terminal, type TerminalExit } from './terminal.js';
import { TerminalJournal, type TerminalRecord } from './terminal-journal.js';

/** Detail of a terminal a crashed daemon left open. */
export const RESTARTED_DETAIL = 'daemon restarted while the terminal was open';

/** What the table needs from the daemon. */
export interface TerminalTableDeps {
  journalPath: string;
  sessions: SessionTable;
  processes: ProcessRegistry;
  log: Logger;
  graceMs: () => number;
  idleCloseMs: () => number;
  /** Exited terminals a session keeps listed (`maxTerminalsPerSession`); older ones are forgotten. */
  keepExited: () => number;
  /** Exited terminals the daemon keeps listed across sessions (`maxExitedTerminals`). */
  keepExitedTotal: () => number;
}

/** Every terminal of the daemon, running or exited-and-still-listed. */
export class TerminalTable {
  private readonly terminals = new Map<string, Terminal>();
  private readonly cleanups = new Map<Terminal, Promise<void>>();
  private readonly closeReasons = new Map<Terminal, string>();
  private readonly groups = new Map<Terminal, TrackedGroup>();
  private readonly idleTimers = new Map<Terminal, NodeJS.Timeout>();
  private readonly recoveries = new Set<Promise<unknown>>();
  private readonly journal: TerminalJournal;
  private nextNumber = 1;

  constructor(private readonly deps: TerminalTableDeps) {
    this.journal = new TerminalJournal(deps.journalPath, () => ({
      nextNumber: this.nextNumber,
      records: this.list().map((terminal) => toRecord(terminal)),
    }));
  }

  /**
   * Loads the journal of a previous daemon: terminals it left open are listed `exited` with
   * RESTARTED_DETAIL and their processes are killed in the background; ids continue.
   */
  restore(): number {
    const state = this.journal.load();
    if (state.skipped > 0) {
      this.deps.log.warn({ skipped: state.skipped }, 'terminal journal: lines that are not valid entries skipped');
    }
    this.nextNumber = Math.max(this.nextNumber, state.nextNumber);
    let interrupted = 0;
    for (const record of state.records) {
      if (!record.exit) {
        interrupted += 1;
        record.exit = { exitCode: null, signal: null, detail: RESTARTED_DETAIL, exitedAt: new Date().toISOString() };
        const killing = killRecoveredTerminal(record.pid, record.procStartTime, this.deps.graceMs()).catch(() => 0);
        this.recoveries.add(killing);
        killing
          .finally(() => this.recoveries.delete(killing))
          // Cannot reject: `killing` is caught above and deleting from a Set does not throw.
          .catch(() => undefined);
      }
      this.terminals.set(record.id, restoredTerminal(record));
    }
    this.journal.rewrite({ nextNumber: this.nextNumber, records: state.records });
    return interrupted;
  }

  /** A fresh id, `term-<n>`; never handed out twice, also across restarts. */
  allocateId(): string {
    const n = this.nextNumber++;
    this.journal.append({ op: 'next', n: this.nextNumber });
    return `term-${n}`;
  }

  /** Adds a started terminal: journaled, counted as a process, cleaned up and announced when its program exits. */
  add(terminal: Terminal): void {
    this.terminals.set(terminal.id, terminal);
    this.journal.append({ op: 'open', record: toRecord(terminal) });
    const group = this.deps.processes.track({
      pgid: terminal.pid,
      sessionId: terminal.setup.ownerSession,
      kind: 'terminal',
    });
    this.groups.set(terminal, group);
    this.scheduleIdleCheck(terminal);
    const cleanup = terminal.exited
      .then(async (exit) => this.afterExit(terminal, exit))
      .catch((error: Error) =>
        this.deps.log.error({ terminalId: terminal.id, err: error }, 'terminal clean-up failed'),
      );
    this.cleanups.set(terminal, cleanup);
  }

  /** The terminal if `sessionId` owns it: JOB_NOT_FOUND for an unknown id, FORBIDDEN for another session's. */
  require(terminalId: string, sessionId: string): Terminal | ExecdError {
    const terminal = this.terminals.get(terminalId);
    if (!terminal) return new ExecdError('JOB_NOT_FOUND', `no terminal ${terminalId}`);
    if (terminal.setup.ownerSession !== sessionId) {
      return new ExecdError('FORBIDDEN', `terminal ${terminalId} belongs to another session, not to ${sessionId}`);
    }
    return terminal;
  }

  /** Every terminal, or one session's, in id order. */
  list(sessionId?: string): Terminal[] {
    const all = [...this.terminals.values()].sort((a, b) => idNumber(a.id) - idNumber(b.id));
    return sessionId === undefined ? all : all.filter((terminal) => terminal.setup.ownerSession === sessionId);
  }

  /** Terminals whose program still runs, of one session or all. */
  running(sessionId?: string): Terminal[] {
    return this.list(sessionId).filter((terminal) => terminal.running);
  }

  /**
   * Closes a terminal: everything on it is killed (TERM, KILL after graceMs); resolves once it is
   * all gone. False when the program had already exited (a second close is a no-op).
   */
  async close(terminal: Terminal, reason: string): Promise<boolean> {
    const wasRunning = terminal.running;
    if (wasRunning) {
      if (!this.closeReasons.has(terminal)) this.closeReasons.set(terminal, reason);
      await this.killAll(terminal);
      // The PTY reports the exit once its program is reaped; force it if that never comes.
      await Promise.race([terminal.exited, delay(2_000)]);
      terminal.markExit({ exitCode: null, signal: 'SIGKILL', detail: reason });
    }
    await this.cleanups.get(terminal);
    return wasRunning;
  }

  /** Closes every terminal of a session and forgets them; returns how many were running. */
  async closeSession(sessionId: string): Promise<number> {
    const terminals = this.list(sessionId);
    const results = await Promise.all(terminals.map((terminal) => this.close(terminal, 'session closed')));
    for (const terminal of terminals) this.forget(terminal);
    return results.filter(Boolean).length;
  }

  /** Closes every terminal (daemon shutdown) and waits for crash recoveries; then closes the journal. */
  async closeAll(reason: string): Promise<void> {
    await Promise.all(this.running().map((terminal) => this.close(terminal, reason)));
    await Promise.all([...this.recoveries]);
    for (const timer of this.idleTimers.values()) clearTimeout(timer);
    this.journal.close();
  }

  /** Counts for `daemon/status`. */
  counts(): { running: number; exited: number } {
    const running = this.running().length;
    return { running, exited: this.terminals.size - running };
  }

  /**
   * Kills everything on the terminal, in one kill: what is in its session, and what was started on
   * it and left the session (`setsid`, a double fork), found in the terminal's unit.
   */
  private async killAll(terminal: Terminal): Promise<void> {
    const escaped = this.deps.processes.scopes.escaped(terminal.setup.ownerSession, terminal.id, {
      spare: (member) => member.sid === terminal.pid,
      signals: TERMINAL_SIGNALS,
    });
    await terminate([terminalSession(terminal.pid, terminal.procStartTime), escaped], this.deps.graceMs());
  }

  private forget(terminal: Terminal): void {
    if (this.terminals.get(terminal.id) !== terminal) return;
    this.terminals.delete(terminal.id);
    // Nothing of a forgotten terminal may stay reachable from the table.
    this.cleanups.delete(terminal);
    this.closeReasons.delete(terminal);
    this.groups.delete(terminal);
    clearTimeout(this.idleTimers.get(terminal));
    this.idleTimers.delete(terminal);
    terminal.dropViewers();
    terminal.dispose();
    this.journal.append({ op: 'forget', id: terminal.id });
  }

  /** After the program exited: kill what is left on the terminal, journal, announce, free the PTY. */
  private async afterExit(terminal: Terminal, exit: TerminalExit): Promise<void> {
    const reason = this.closeReasons.get(terminal);
    this.closeReasons.delete(terminal);
    if (reason && exit.detail === undefined) exit.detail = reason;
    clearTimeout(this.idleTimers.get(terminal));
    this.idleTimers.delete(terminal);
    // Anything the program left behind on its session dies with the terminal.
    await this.killAll(terminal).catch(() => undefined);
    this.deps.processes.scopes.release(terminal.setup.ownerSession, terminal.id);
    const group = this.groups.get(terminal);
    this.groups.delete(terminal);
    if (group) this.deps.processes.untrack(group);
    // An exited terminal keeps its scrollback for reads, not its emulator.
    await terminal.releaseScreen();
    this.journal.append({
      op: 'exit',
      id: terminal.id,
      exit: { ...exit, exitedAt: (terminal.exitedAt ?? new Date()).toISOString() },
    });
    this.deps.log.info(
      { terminalId: terminal.id, sessionId: terminal.setup.ownerSession, exitCode: exit.exitCode, signal: exit.signal },
      'terminal exited',
    );
    const params = { sessionId: terminal.setup.ownerSession, terminal: terminal.snapshot() };
    for (const holder of this.deps.sessions.holdersOf(terminal.setup.ownerSession))
      holder.notify(TerminalExited, params);
    this.pruneExited(terminal.setup.ownerSession);
  }

  /**
   * Forgets the oldest exited terminals of a session past `keepExited`, and daemon-wide past
   * `keepExitedTotal`, so their scrollback does not pile up.
   */
  private pruneExited(sessionId: string): void {
    const exited = this.list(sessionId).filter((terminal) => !terminal.running);
    for (const terminal of exited.slice(0, Math.max(0, exited.length - this.deps.keepExited()))) this.forget(terminal);
    const all = this.list().filter((terminal) => !terminal.running);
    for (const terminal of all.slice(0, Math.max(0, all.length - this.deps.keepExitedTotal()))) this.forget(terminal);
  }

  /** Closes the terminal once it saw no send, write or attach for `terminalIdleCloseMs` and nothing runs in its foreground. */
  private scheduleIdleCheck(terminal: Terminal): void {
    const idleMs = this.deps.idleCloseMs();
    const due = Math.max(0, terminal.lastActivity + idleMs - Date.now());
    const timer = setTimeout(
      () => {
        if (!terminal.running) return;
        const stillIdle = Date.now() - terminal.lastActivity >= this.deps.idleCloseMs();
        const own = terminal.shellPgid ?? terminal.pid;
        const foreground = terminal.foregroundPgid();
        if (stillIdle && !terminal.busy && (foreground === undefined || foreground === own)) {
          this.deps.log.info({ terminalId: terminal.id }, 'closing idle terminal');
          void this.close(terminal, 'closed after terminalIdleCloseMs without use').catch(() => {});
          return;
        }
        this.scheduleIdleCheck(terminal);
      },
      Math.min(due + 10, 2_147_483_647),
    );
    timer.unref();
    this.idleTimers.set(terminal, timer);
  }
}

function idNumber(id: string): number {
  return Number(id.slice('term-'.length));
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The journal record of a terminal. */
function toRecord(terminal: Terminal): TerminalRecord {
  const { setup } = terminal;
  return {
    id: terminal.id,
    n: idNumber(terminal.id),
    sessionId: setup.ownerSession,
    ...(setup.name === undefined ? {} : { name: setup.name }),
    argv: setup.argv,
    cwd: setup.cwd,
    pid: terminal.pid,
    ...(terminal.procStartTime === undefined ? {} : { procStartTime: terminal.procStartTime }),
    cols: terminal.cols,
    rows: terminal.rows,
    startedAt: terminal.startedAt.toISOString(),
    ...(terminal.exit
      ? {
          exit: {
            exitCode: terminal.exit.exitCode,
            signal: terminal.exit.signal,
            ...(terminal.exit.detail === undefined ? {} : { detail: terminal.exit.detail }),
            exitedAt: (terminal.exitedAt ?? new Date()).toISOString(),
          },
        }
      : {}),
  };
}

/** An exited terminal rebuilt from its record (no PTY, empty scrollback). */
function restoredTerminal(record: TerminalRecord): Terminal {
  const terminal = new Terminal({
    id: record.id,
    name: record.name,
    ownerSession: record.sessionId,
    argv: record.argv,
    cwd: record.cwd,
    cols: record.cols,
    rows: record.rows,
    scrollbackBytes: 1,
  });
  terminal.pid = record.pid;
  (terminal as { startedAt: Date }).startedAt = new Date(record.startedAt);
  const exit = record.exit!;
  terminal.markExit({ exitCode: exit.exitCode, signal: exit.signal, ...(exit.detail ? { detail: exit.detail } : {}) });
  terminal.exitedAt = new Date(exit.exitedAt);
  terminal.dispose();
  return terminal;
}
