/**
 * The screen view of a terminal (docs/terminals.md `view: 'screen'`): the output fed through
 * `@xterm/headless`, rendered as the text a person would see now (cursor moves applied, the
 * alternate screen of `less` or `vim` shown, colours dropped).
 *
 * This module runs in the screen worker (screen-worker.ts), off the daemon's event loop (one
 * read of a hostile scrollback on the main thread froze every client for 45 s). Output is fed as it
 * arrives, cut into pieces of bounded cost (`screenPieces`), one piece per turn of the worker's
 * event loop, so a render request is answered between any two pieces. A terminal that prints
 * faster than its screen can follow, or whose output keeps the emulator busy past
 * `CATCH_UP_BUDGET_MS`, skips ahead to the tail of what is waiting: the screen is then what that
 * tail draws.
 */
import { createRequire } from 'node:module';
import type { Terminal as XtermTerminal } from '@xterm/headless';
import { screenPieces } from './screen-pieces.js';

type XtermModule = { Terminal: typeof XtermTerminal };
let xterm: XtermModule | undefined;

/** Loads @xterm/headless on first use (CommonJS), so a daemon without terminals never pays for it. */
function loadXterm(): XtermModule {
  xterm ??= createRequire(import.meta.url)('@xterm/headless') as XtermModule;
  return xterm;
}

/** Bytes of one piece of plain output handed to the emulator at once (~1.5 ms of parsing). */
const PIECE_BYTES = 16 * 1024;
/** Output waiting for the emulator, per screen; past it the oldest is skipped. */
export const SCREEN_BACKLOG_BYTES = 1024 * 1024;
/** Work a screen may cost while it is behind; past it the backlog is skipped to its last `SKIP_TO_BYTES`. */
const CATCH_UP_BUDGET_MS = 2_000;
/** What is kept of a backlog that is skipped. */
const SKIP_TO_BYTES = 16 * 1024;

type Step = { bytes: Buffer } | { cols: number; rows: number };

/** Screens with work waiting, served in turn, one piece per turn of the event loop. */
const waiting: Screen[] = [];
/** True from a turn's start until its piece was parsed: one piece in flight for the whole daemon. */
let turnActive = false;

function scheduleTurn(): void {
  if (turnActive || waiting.length === 0) return;
  turnActive = true;
  setImmediate(() => {
    const screen = waiting.shift();
    const next = () => {
      turnActive = false;
      scheduleTurn();
    };
    if (screen) screen.runStep(next);
    else next();
  });
}

/** One terminal's emulated screen. */
export class Screen {
  private readonly term: XtermTerminal;
  private disposed = false;
  private readonly steps: Step[] = [];
  private backlogBytes = 0;
  private queued = false;
  /** Work spent since the screen last had nothing waiting. */
  private behindMs = 0;
  private readonly idleWaiters = new Set<() => void>();
  /** Ends the turn of the piece the emulator is parsing now. */
  private inFlight: (() => void) | undefined;

  constructor(cols: number, rows: number) {
    const { Terminal } = loadXterm();
    this.term = new Terminal({ cols, rows, scrollback: 0, allowProposedApi: true });
  }

  /** Bytes waiting for the emulator. */
  get backlog(): number {
    return this.backlogBytes;
  }

  /** Queues output for the emulator. */
  write(bytes: Uint8Array): void {
    if (this.disposed || bytes.length === 0) return;
    const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
    for (const piece of screenPieces(buffer, PIECE_BYTES)) this.steps.push({ bytes: piece });
    this.backlogBytes += buffer.length;
    if (this.backlogBytes > SCREEN_BACKLOG_BYTES) this.skipTo(SCREEN_BACKLOG_BYTES);
    this.enqueue();
  }

  /** Follows the PTY's size, in order with the output: what came before is laid out at the old size. */
  resize(cols: number, rows: number): void {
    if (this.disposed) return;
    this.steps.push({ cols, rows });
    this.enqueue();
  }

  /** Resolves once the emulator has parsed everything queued, or after `timeoutMs`. */
  caughtUp(timeoutMs: number): Promise<void> {
    if (this.steps.length === 0 || this.disposed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.idleWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      this.idleWaiters.add(done);
    });
  }

  /** The visible screen, one line per row, trailing spaces and trailing empty rows removed. */
  render(): string {
    if (this.disposed) return '';
    const buffer = this.term.buffer.active;
    const lines: string[] = [];
    for (let y = 0; y < this.term.rows; y++) {
      lines.push(buffer.getLine(buffer.baseY + y)?.translateToString(true) ?? '');
    }
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    return lines.join('\n');
  }

  /** The cursor's 1-based row and column on the visible screen (a pending wrap counts as the last column). */
  cursor(): { row: number; col: number } {
    const buffer = this.term.buffer.active;
    return { row: buffer.cursorY + 1, col: Math.min(buffer.cursorX + 1, this.term.cols) };
  }

  /** Frees the emulator. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    // A piece in flight may never be reported by a disposed emulator: its turn ends here.
    const inFlight = this.inFlight;
    this.inFlight = undefined;
    this.steps.length = 0;
    this.backlogBytes = 0;
    this.settleIdle();
    this.term.dispose();
    inFlight?.();
  }

  /** Runs one step (the scheduler's turn); `next` schedules the next turn once the emulator is done with it. */
  runStep(next: () => void): void {
    this.queued = false;
    const step = this.steps.shift();
    if (this.disposed || !step) {
      this.settleIdle();
      next();
      return;
    }
    const started = performance.now();
    let reported = false;
    const after = () => {
      if (reported) return;
      reported = true;
      this.inFlight = undefined;
      this.behindMs += performance.now() - started;
      if (this.steps.length === 0) this.settleIdle();
      else {
        // Each time the budget runs out, a quarter at most of what waits is kept: hostile output ends.
        if (this.behindMs > CATCH_UP_BUDGET_MS) this.skipTo(Math.min(SKIP_TO_BYTES, Math.floor(this.backlogBytes / 4)));
        this.enqueue();
      }
      next();
    };
    if ('cols' in step) {
      this.term.resize(step.cols, step.rows);
      after();
      return;
    }
    this.backlogBytes -= step.bytes.length;
    this.inFlight = after;
    this.term.write(step.bytes, after);
  }

  /** Drops the oldest waiting output until at most `keepBytes` of it is left (resizes are kept). */
  private skipTo(keepBytes: number): void {
    let drop = this.backlogBytes - keepBytes;
    const kept: Step[] = [];
    for (const step of this.steps) {
      if ('bytes' in step && drop > 0) {
        drop -= step.bytes.length;
        this.backlogBytes -= step.bytes.length;
        continue;
      }
      kept.push(step);
    }
    this.steps.splice(0, this.steps.length, ...kept);
    this.behindMs = 0;
  }

  private enqueue(): void {
    if (this.queued || this.disposed) return;
    this.queued = true;
    waiting.push(this);
    scheduleTurn();
  }

  private settleIdle(): void {
    this.behindMs = 0;
    for (const waiter of [...this.idleWaiters]) waiter();
    this.idleWaiters.clear();
  }
}
