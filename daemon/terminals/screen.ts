/**
 * The screen view of a terminal (SPEC §9.1 `view: 'screen'`): the output fed through
 * `@xterm/headless`, rendered as the text a person would see now (cursor moves applied, the
 * alternate screen of `less` or `vim` shown, colours dropped).
 */
import { createRequire } from 'node:module';
import type { Terminal as XtermTerminal } from '@xterm/headless';

type XtermModule = { Terminal: typeof XtermTerminal };
let xterm: XtermModule | undefined;

/** Loads @xterm/headless on first use (CommonJS), so a daemon without terminals never pays for it. */
function loadXterm(): XtermModule {
  xterm ??= createRequire(import.meta.url)('@xterm/headless') as XtermModule;
  return xterm;
}

/** One terminal's emulated screen. */
export class Screen {
  private readonly term: XtermTerminal;
  private disposed = false;

  constructor(cols: number, rows: number) {
    const { Terminal } = loadXterm();
    this.term = new Terminal({ cols, rows, scrollback: 0, allowProposedApi: true });
  }

  /** Feeds output (queued; `render` waits until it is parsed). */
  write(bytes: Uint8Array): void {
    if (!this.disposed) this.term.write(bytes);
  }

  /** Follows the PTY's size. */
  resize(cols: number, rows: number): void {
    if (!this.disposed) this.term.resize(cols, rows);
  }

  /** The visible screen, one line per row, trailing spaces and trailing empty rows removed. */
  async render(): Promise<string> {
    if (this.disposed) return '';
    await new Promise<void>((resolve) => this.term.write('', resolve));
    const buffer = this.term.buffer.active;
    const lines: string[] = [];
    for (let y = 0; y < this.term.rows; y++) {
      lines.push(buffer.getLine(buffer.baseY + y)?.translateToString(true) ?? '');
    }
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    return lines.join('\n');
  }

  /** Frees the emulator. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.term.dispose();
  }
}
