/**
 * One daemon terminal (docs/terminals.md): a PTY and its program, the filtered output stream (private
 * markers removed and reported, terminal queries removed and answered), the scrollback ring, the emulated screen, the attached
 * connections, and the facts its snapshot reports.
 */
import { rmSync } from 'node:fs';
import { constants } from 'node:os';
import type { SandboxMode } from '../../protocol/sandbox.js';
import type { TerminalSnapshot } from '../../protocol/terminal.js';
import type { OutputFlow } from '../runs/foreground.js';
import { completePrefixLength, decodeUtf8 } from '../../spill/utf8.js';
import { MarkerFilter, type MarkerEvent } from './markers.js';
import { InputQueue } from './input-queue.js';
import { nonBlockingMaster, type Pty } from './pty.js';
import { SCREEN_BACKLOG_BYTES } from './screen.js';
import { RemoteScreen } from './screen-host.js';
import { Scrollback } from './scrollback.js';
import { QueryAnswers, QueryFilter, queryAnswer, type TerminalQuery } from './terminal-queries.js';
import { readProcCwd, readTtyStat } from './tty-proc.js';
import { terminalWaits } from './stdin-wait.js';
import { HAS_PROC } from '../../shared/proc.js';

/** Most output held back as the echo of a run line; past it the hold ends and the bytes are output as they are. */
const ECHO_HOLD_BYTES = 256 * 1024;
/** How the echo of a run line starts (the leading space, then the start function). */
const RUN_LINE_START = Buffer.from(' __execd_s ');

/** Longest a screen read waits for the emulator to catch up before answering the screen as it is. */
const SCREEN_READ_WAIT_MS = 1_000;

/** How long bytes that may start a private sequence are held before they are released as output. */
const HOLD_MS = 30;

const PASTE_ON = Buffer.from('\x1b[?2004h');
const PASTE_OFF = Buffer.from('\x1b[?2004l');

/** A connection that receives `terminal/output`. */
export interface TerminalViewer {
  notifyOutput(terminalId: string, data: string, offset: number): void;
  /** The connection's back-pressure: the backlog of an attach is sent only while it is open. */
  flow?: OutputFlow;
}

/** Largest `terminal/output` notification of an attach's backlog (one of 25 MB dropped the client). */
export const ATTACH_CHUNK_BYTES = 64 * 1024;

/** What a terminal was opened with. */
export interface TerminalSetup {
  id: string;
  name?: string;
  ownerSession: string;
  /** The program as asked (before sandbox wrapping). */
  argv: string[];
  cwd: string;
  /** The sandbox mode it runs under (what watches the daemon labels its runs with). */
  sandboxMode?: SandboxMode;
  cols: number;
  rows: number;
  /** The secret of its private markers; undefined for an `argv` terminal (no prompt tier). */
  secret?: string;
  /** The file the shell reads its setup line from at its first prompt, removed once read (see `bootPromptCommand`). */
  setupFile?: string;
  scrollbackBytes: number;
}

/** How the program ended. */
export interface TerminalExit {
  exitCode: number | null;
  signal: string | null;
  detail?: string;
}

type OutputListener = (bytes: Buffer, offset: number) => void;
/**
 * Gets each private marker with the stream offset it stood at and whether the shell owned the
 * terminal's foreground when it was seen: a marker printed by a program in the foreground (one
 * that learned the secret somehow) never ends a wait.
 */
type MarkerListener = (marker: MarkerEvent, offset: number, fromShell: boolean) => void;

/** Name of a signal number (`SIGKILL` for 9), or null. */
function signalName(signal: number | undefined): string | null {
  if (!signal) return null;
  const entry = Object.entries(constants.signals).find(([, value]) => value === signal);
  return entry?.[0] ?? `signal ${signal}`;
}

/** A live or exited terminal. */
export class Terminal {
  readonly id: string;
  readonly setup: TerminalSetup;
  readonly startedAt = new Date();
  readonly scrollback: Scrollback;
  /** The emulated screen, created at the first screen read and fed as output arrives from then on. */
  private screen: RemoteScreen | undefined;
  /** The last screen of an exited terminal, kept as text once its emulator is released. */
  private finalScreen: string | undefined;
  pid = 0;
  /** Start time of the program's process (clock ticks), for the journal and recovery. */
  procStartTime: number | undefined;
  cols: number;
  rows: number;
  exit: TerminalExit | undefined;
  exitedAt: Date | undefined;
  /** True while a send or run is in flight. */
  busy = false;
  /** Last send, write or attach (for `terminalIdleCloseMs`). */
  lastActivity = Date.now();
  /** Whether the program last switched bracketed paste on (`ESC [ ? 2004 h`), as readline does at each prompt. */
  bracketedPaste = false;
  /**
   * True from the daemon's prompt marker until the next input: the shell that printed it is at its
   * prompt, with the marker functions its prompt command defines (see `runLine`).
   */
  atOwnPrompt = false;
  /** The exit status the shell's last prompt marker reported (the status of the command line that just ended). */
  promptStatus: number | undefined;
  /**
   * Until this time (ms since the epoch) a prompt is on its way: a signal went to a foreground job of
   * the shell. A send waits for it first, so that prompt cannot end the send (see send.ts).
   */
  promptDueUntil = 0;
  /** Output held back while a run line is echoed (see `holdEcho`). */
  private echoHold: { nonce: string; display: string; bytes: Buffer[]; length: number } | undefined;
  /** The shell's own process group, learned at its first prompt. */
  shellPgid: number | undefined;
  /** Device number of the PTY slave (the program's `tty_nr`). */
  private slave: number | undefined;
  /** Resolves when the program has exited. */
  readonly exited: Promise<TerminalExit>;
  private markExited: (exit: TerminalExit) => void = () => {};
  private pty: Pty | undefined;
  /** Input on its way to the PTY; undefined where the library writes itself (no descriptor). */
  private input: InputQueue | undefined;
  private readonly filter: MarkerFilter | undefined;
  /** Takes terminal queries (cursor position, colours, attributes) out of the output. */
  private readonly queries = new QueryFilter();
  /** Answers to those queries, on their way to the program that asked. */
  private readonly answers = new QueryAnswers({
    atPrompt: () => this.isShell && this.waitsAtOwnPrompt(),
    readerWaits: () => this.readerWaits(),
    write: (answer) => {
      this.write(answer);
    },
  });
  private holdTimer: NodeJS.Timeout | undefined;
  private readonly outputListeners = new Set<OutputListener>();
  private readonly markerListeners = new Set<MarkerListener>();
  private readonly exitListeners = new Set<() => void>();
  private readonly viewers = new Set<TerminalViewer>();
  /** Viewers still being sent their backlog, each with the attach it belongs to. */
  private readonly catchingUp = new Map<TerminalViewer, object>();
  /** Offset up to which attached viewers have been sent output. */
  private notifiedEnd = 0;

  constructor(setup: TerminalSetup) {
    this.id = setup.id;
    this.setup = setup;
    this.cols = setup.cols;
    this.rows = setup.rows;
    this.scrollback = new Scrollback(setup.scrollbackBytes);
    this.filter = setup.secret === undefined ? undefined : new MarkerFilter(setup.secret);
    this.exited = new Promise((resolve) => (this.markExited = resolve));
  }

  /** True for a daemon shell terminal (prompt marker and `terminal/run`). */
  get isShell(): boolean {
    return this.setup.secret !== undefined;
  }

  /** True while the program runs. */
  get running(): boolean {
    return this.exit === undefined;
  }

  /** Takes over a spawned PTY. */
  attachPty(pty: Pty): void {
    this.pty = pty;
    this.pid = pty.pid;
    this.procStartTime = readTtyStat(pty.pid)?.startTime;
    const fd = nonBlockingMaster(pty);
    if (fd !== undefined) this.input = new InputQueue(fd);
    pty.onData((data) => this.receive(Buffer.isBuffer(data) ? data : Buffer.from(data)));
    pty.onExit(({ exitCode, signal }) =>
      this.markExit({ exitCode: signal ? null : exitCode, signal: signalName(signal) }),
    );
  }

  /** Records an exit that was not seen from the PTY (a spawn failure, a daemon restart). */
  markExit(exit: TerminalExit): void {
    if (this.exit) return;
    clearTimeout(this.holdTimer);
    this.releaseHeld();
    this.answers.drop();
    this.releaseEcho(false);
    this.input?.close();
    this.removeSetupFile();
    this.exit = exit;
    this.exitedAt = new Date();
    this.markExited(exit);
    for (const listener of [...this.exitListeners]) listener();
    this.exitListeners.clear();
  }

  /**
   * Calls `listener` once when the program exits; returns the unsubscribe. Waits use this rather
   * than `exited`: a reaction on a promise that stays pending for the terminal's life is retained
   * with everything it closes over, one per wait.
   */
  onExit(listener: () => void): () => void {
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  /** Device number of the PTY slave, read from the program's stat once it has it. */
  slaveDevice(): number | undefined {
    if (this.slave) return this.slave;
    const ttyNr = this.pid > 0 ? readTtyStat(this.pid)?.ttyNr : undefined;
    if (ttyNr) this.slave = ttyNr;
    return this.slave;
  }

  /** The terminal's foreground process group now (from the program's stat), or undefined. */
  foregroundPgid(): number | undefined {
    if (!this.running || this.pid <= 0) return undefined;
    const tpgid = readTtyStat(this.pid)?.tpgid;
    return tpgid !== undefined && tpgid > 0 ? tpgid : undefined;
  }

  /** True when the shell owns the terminal's foreground (the prompt tier's condition). */
  shellOwnsForeground(): boolean {
    const pgid = this.foregroundPgid();
    return pgid !== undefined && (this.shellPgid === undefined || pgid === this.shellPgid);
  }

  /**
   * True when the daemon's own shell waits at its prompt: its prompt marker came after the last input,
   * it owns the terminal's foreground, no input waits to be read, and it is still the program it was
   * at its first prompt (not replaced by `exec sh`).
   */
  waitsAtOwnPrompt(): boolean {
    if (!this.atOwnPrompt || this.inputPending > 0 || this.shellPgid === undefined) return false;
    return this.foregroundPgid() === this.shellPgid;
  }

  /**
   * Queues input for the program (written in chunks, see InputQueue); false when it has exited.
   * Empty input writes nothing and so leaves the at-prompt state as it is: a harness that polls
   * with empty sends must still see the shell at its prompt.
   */
  write(data: string | Buffer): boolean {
    if (!this.pty || !this.running) return false;
    if (data.length === 0) return true;
    this.atOwnPrompt = false;
    if (!this.input) {
      (this.pty.write as (data: string | Buffer) => void)(data);
      return true;
    }
    return this.input.push(Buffer.isBuffer(data) ? data : Buffer.from(data));
  }

  /** Input bytes queued and not yet taken by the PTY. */
  get inputPending(): number {
    return this.input?.pending ?? 0;
  }

  /** Resolves once the queued input was written, or after `timeoutMs` (then the rest is dropped). */
  async inputWritten(timeoutMs: number): Promise<boolean> {
    if (!this.input || this.input.pending === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const done = await Promise.race([this.input.drained().then(() => true), timedOut]);
    clearTimeout(timer);
    if (!done) this.input.discard();
    return done;
  }

  /** Resizes the PTY and the emulated screen. */
  resize(cols: number, rows: number): void {
    this.cols = cols;
    this.rows = rows;
    this.screen?.resize(cols, rows);
    if (this.pty && this.running) this.pty.resize(cols, rows);
  }

  /** Output listeners get each filtered chunk with its stream offset; returns the unsubscribe. */
  onOutput(listener: OutputListener): () => void {
    this.outputListeners.add(listener);
    return () => this.outputListeners.delete(listener);
  }

  /** Marker listeners get each private marker with the stream offset it stood at. */
  onMarker(listener: MarkerListener): () => void {
    this.markerListeners.add(listener);
    return () => this.markerListeners.delete(listener);
  }

  /**
   * Starts sending `terminal/output` to a viewer from `offset` (default: the end); returns the start
   * offset. The backlog goes in notifications of at most ATTACH_CHUNK_BYTES, each after the
   * connection drained the one before; live output follows once the viewer caught up. A viewer that
   * falls behind the ring while it catches up continues at the ring's oldest byte (the offsets tell).
   */
  attachViewer(viewer: TerminalViewer, offset: number | undefined): number {
    this.lastActivity = Date.now();
    this.viewers.delete(viewer);
    const from = Math.min(Math.max(offset ?? this.notifiedEnd, this.scrollback.start), this.notifiedEnd);
    const turn = {};
    this.catchingUp.set(viewer, turn);
    // Cannot reject: notifications and flow waits do not throw; the catch keeps it so.
    this.sendBacklog(viewer, from, turn).catch(() => undefined);
    return from;
  }

  /** Stops a viewer's notifications. */
  detachViewer(viewer: TerminalViewer): boolean {
    const catching = this.catchingUp.delete(viewer);
    return this.viewers.delete(viewer) || catching;
  }

  /** Stops every viewer (the terminal is forgotten). */
  dropViewers(): void {
    this.viewers.clear();
    this.catchingUp.clear();
  }

  private async sendBacklog(viewer: TerminalViewer, from: number, turn: object): Promise<void> {
    let at = from;
    while (this.catchingUp.get(viewer) === turn) {
      at = Math.max(at, this.scrollback.start);
      if (at >= this.notifiedEnd) {
        this.catchingUp.delete(viewer);
        this.viewers.add(viewer);
        return;
      }
      // One copy of what is left, sent in chunks; output that arrives meanwhile is the next round.
      const { bytes, offset } = this.scrollback.rawFrom(at);
      const backlog = bytes.subarray(0, this.notifiedEnd - offset);
      let sent = 0;
      while (sent < backlog.length && this.catchingUp.get(viewer) === turn) {
        const window = backlog.subarray(sent, sent + ATTACH_CHUNK_BYTES);
        const length =
          window.length < ATTACH_CHUNK_BYTES ? window.length : completePrefixLength(window) || window.length;
        viewer.notifyOutput(this.id, decodeUtf8(window.subarray(0, length)), offset + sent);
        sent += length;
        const flow = viewer.flow;
        if (flow?.blocked) await new Promise<void>((resolve) => flow.whenOpen(resolve));
        else if (sent < backlog.length) await new Promise<void>((resolve) => setImmediate(resolve));
      }
      at = offset + sent;
    }
  }

  /**
   * Frees the emulator once the terminal is forgotten. The PTY needs nothing: node-pty reports the
   * exit only after its descriptor closed, and signalling its pid now could hit a reused pid.
   */
  dispose(): void {
    this.screen?.dispose();
    this.screen = undefined;
    this.finalScreen = undefined;
  }

  /**
   * The current screen as text. A terminal nobody looked at costs no emulation, however much it
   * prints: the emulator starts at the first screen read, from the tail of the scrollback, and is
   * fed in bounded pieces in the screen worker (see screen.ts, screen-host.ts). A read waits at most `SCREEN_READ_WAIT_MS` for it to
   * catch up and answers the screen as far as it got.
   */
  async renderScreen(): Promise<string> {
    if (this.finalScreen !== undefined) return this.finalScreen;
    if (!this.screen) {
      this.screen = new RemoteScreen(this.cols, this.rows);
      const from = Math.max(this.scrollback.start, this.scrollback.end - SCREEN_BACKLOG_BYTES);
      this.screen.write(this.scrollback.rawFrom(from).bytes);
    }
    return this.screen.render(SCREEN_READ_WAIT_MS);
  }

  /** Keeps an exited terminal's last screen as text and frees its emulator. */
  async releaseScreen(): Promise<void> {
    const screen = this.screen;
    if (!screen) return;
    const text = await screen.render(SCREEN_READ_WAIT_MS);
    if (this.screen !== screen) return;
    this.finalScreen = text;
    screen.dispose();
    this.screen = undefined;
  }

  /** What `terminal/list` and every result report. */
  snapshot(): TerminalSnapshot {
    const fg = this.foregroundPgid();
    const own = this.shellPgid ?? this.pid;
    return {
      id: this.id,
      ...(this.setup.name === undefined ? {} : { name: this.setup.name }),
      ownerSession: this.setup.ownerSession,
      argv: this.setup.argv,
      // Where the program is now (a shell's `cd`), else where it started.
      cwd: (this.running && this.pid > 0 ? readProcCwd(own) : undefined) ?? this.setup.cwd,
      pid: this.pid,
      cols: this.cols,
      rows: this.rows,
      status: this.running ? 'running' : 'exited',
      exitCode: this.exit?.exitCode ?? null,
      signal: this.exit?.signal ?? null,
      ...(this.exit?.detail === undefined ? {} : { detail: this.exit.detail }),
      ...(fg !== undefined && fg !== own ? { foreground: { pgid: fg, command: readTtyStat(fg)?.comm ?? '' } } : {}),
      busy: this.busy,
      startedAt: this.startedAt.toISOString(),
      ...(this.exitedAt ? { exitedAt: this.exitedAt.toISOString() } : {}),
      outputBytes: this.scrollback.end,
    };
  }

  private receive(chunk: Buffer): void {
    clearTimeout(this.holdTimer);
    if (!this.filter) this.passOutput(chunk);
    else {
      for (const piece of this.filter.push(chunk)) {
        if ('bytes' in piece) this.passOutput(piece.bytes);
        else {
          // Bytes held as a possible query's start cannot become one across a marker.
          this.emitBytes(this.queries.flush());
          this.emitMarker(piece.marker);
        }
      }
    }
    if (this.filter?.holding || this.queries.holding) {
      // Bytes that only looked like a sequence's start are output after all once nothing follows.
      this.holdTimer = setTimeout(() => this.releaseHeld(), HOLD_MS);
      this.holdTimer.unref();
    }
  }

  /** Releases what the marker and query filters hold, in stream order. */
  private releaseHeld(): void {
    const held = this.filter?.flush();
    if (held && held.length > 0) this.passOutput(held);
    this.emitBytes(this.queries.flush());
  }

  /** Output without private markers: terminal queries are taken out and answered, the rest goes on. */
  private passOutput(bytes: Buffer): void {
    for (const piece of this.queries.push(bytes)) {
      if ('bytes' in piece) this.emitBytes(piece.bytes);
      else this.answerQuery(piece.query);
    }
  }

  /** Answers a query as a terminal would: the cursor from the emulated screen when there is one. */
  private answerQuery(query: TerminalQuery): void {
    const cursor =
      query.kind === 'cursor' && this.screen ? this.screen.cursor(SCREEN_READ_WAIT_MS) : Promise.resolve(undefined);
    this.answers.add(cursor.then((at) => queryAnswer(query, at)));
  }

  /** Whether a process of the foreground group waits reading the terminal; undefined when /proc cannot tell. */
  private readerWaits(): boolean | undefined {
    const slave = this.slaveDevice();
    if (!HAS_PROC || slave === undefined || !this.running) return undefined;
    return terminalWaits(this.pid, slave).length > 0;
  }

  private emitMarker(marker: MarkerEvent): void {
    if (marker.kind === 'boot') {
      // The shell has read its setup line: the file that held the secret goes at once.
      this.removeSetupFile();
      return;
    }
    const fromShell = this.shellOwnsForeground();
    if (marker.kind === 'start' && this.echoHold?.nonce === marker.nonce) this.releaseEcho(true);
    if (marker.kind === 'prompt' && fromShell) {
      // Nobody is left to read an answer the shell's prompt came back before: it is dropped.
      this.answers.drop();
      this.atOwnPrompt = true;
      this.promptStatus = marker.status;
      this.promptDueUntil = 0;
      if (this.shellPgid === undefined) this.shellPgid = this.foregroundPgid();
    }
    const offset = this.scrollback.end;
    for (const listener of [...this.markerListeners]) listener(marker, offset, fromShell);
  }

  private emitBytes(raw: Buffer): void {
    if (raw.length === 0) return;
    const bytes = this.redact(raw);
    if (this.echoHold) {
      // The echo of a run line is replaced by the command once its start marker arrives.
      this.echoHold.bytes.push(bytes);
      this.echoHold.length += bytes.length;
      if (this.echoHold.length <= ECHO_HOLD_BYTES) return;
      this.releaseEcho(false);
      return;
    }
    this.appendOutput(bytes);
  }

  /**
   * Holds the terminal's output back from the stream until the start marker of run `nonce`: what
   * comes before it is the shell echoing the run line, which the stream shows as `display` (the
   * command that was asked) instead of the daemon's wrapper with its nonce.
   */
  holdEcho(nonce: string, display: string): void {
    this.releaseEcho(false);
    this.echoHold = { nonce, display, bytes: [], length: 0 };
  }

  /** Ends an echo hold: with `replace`, the held echo becomes the display text; else it is released as it was. */
  releaseEcho(replace: boolean): void {
    const hold = this.echoHold;
    if (!hold) return;
    this.echoHold = undefined;
    if (replace) {
      // The prompt stays on its line; the echo after it becomes the command as typed.
      const held = Buffer.concat(hold.bytes);
      const typed = held.indexOf(RUN_LINE_START);
      // Readline shows a pasted line in reverse video; the command is shown plain.
      const kept = Buffer.from(
        (typed >= 0 ? held.subarray(0, typed) : Buffer.alloc(0)).toString('latin1').replaceAll('\x1b[7m', ''),
        'latin1',
      );
      // Readline leaves paste mode once it took the line; a viewer's terminal follows.
      const pasteOff = held.indexOf(PASTE_OFF, Math.max(typed, 0)) >= 0 ? PASTE_OFF : Buffer.alloc(0);
      const shown = Buffer.from(`${hold.display.replace(/\r?\n/g, '\r\n')}\r\n`);
      this.appendOutput(Buffer.concat([kept, pasteOff, shown]));
    } else for (const bytes of hold.bytes) this.appendOutput(bytes);
  }

  /** The terminal's secret never reaches a client, even if a shell echoed it. */
  private redact(bytes: Buffer): Buffer {
    const secret = this.setup.secret;
    if (secret === undefined || bytes.indexOf(secret, 0, 'latin1') < 0) return bytes;
    return Buffer.from(bytes.toString('latin1').replaceAll(secret, '*'.repeat(secret.length)), 'latin1');
  }

  /** Removes the setup file (idempotent): read at the first prompt, or never needed again. */
  private removeSetupFile(): void {
    const file = this.setup.setupFile;
    if (file !== undefined) rmSync(file, { force: true });
  }

  private appendOutput(bytes: Buffer): void {
    const offset = this.scrollback.end;
    const on = bytes.lastIndexOf(PASTE_ON);
    const off = bytes.lastIndexOf(PASTE_OFF);
    if (on !== off) this.bracketedPaste = on > off;
    this.scrollback.append(bytes);
    this.screen?.write(bytes);
    for (const listener of [...this.outputListeners]) listener(bytes, offset);
    this.notifyViewers();
  }

  private notifyViewers(): void {
    const { bytes, offset } = this.scrollback.rawFrom(this.notifiedEnd);
    const complete = completePrefixLength(bytes);
    if (complete === 0) return;
    this.notifiedEnd = offset + complete;
    if (this.viewers.size === 0) return;
    const data = decodeUtf8(bytes.subarray(0, complete));
    for (const viewer of this.viewers) viewer.notifyOutput(this.id, data, offset);
  }
}
