/**
 * Queries a program asks its terminal (docs/terminals.md): the cursor position (`ESC [ 6 n`), the
 * terminal's status (`ESC [ 5 n`), its device attributes (`ESC [ c`, `ESC [ > c`) and its
 * foreground and background colours (`ESC ] 10 ; ?`, `ESC ] 11 ; ?`). A person's terminal answers
 * them on the program's input and shows nothing; so does a daemon terminal: the filter below takes
 * them out of the output (no view shows them, colours and every other sequence stay) and the
 * answers are typed back by `QueryAnswers`. Pure but for the answers' timers.
 */

/** A query found in the output. */
export type TerminalQuery =
  | { kind: 'cursor' }
  | { kind: 'status' }
  | { kind: 'primary-attributes' }
  | { kind: 'secondary-attributes' }
  | { kind: 'colour'; which: 10 | 11; terminator: string };

const ESC = 0x1b;

/** Every query the daemon answers, byte for byte. */
const QUERIES: Array<[Buffer, TerminalQuery]> = [
  [Buffer.from('\x1b[6n'), { kind: 'cursor' }],
  [Buffer.from('\x1b[5n'), { kind: 'status' }],
  [Buffer.from('\x1b[c'), { kind: 'primary-attributes' }],
  [Buffer.from('\x1b[0c'), { kind: 'primary-attributes' }],
  [Buffer.from('\x1b[>c'), { kind: 'secondary-attributes' }],
  [Buffer.from('\x1b[>0c'), { kind: 'secondary-attributes' }],
  [Buffer.from('\x1b]10;?\x07'), { kind: 'colour', which: 10, terminator: '\x07' }],
  [Buffer.from('\x1b]10;?\x1b\\'), { kind: 'colour', which: 10, terminator: '\x1b\\' }],
  [Buffer.from('\x1b]11;?\x07'), { kind: 'colour', which: 11, terminator: '\x07' }],
  [Buffer.from('\x1b]11;?\x1b\\'), { kind: 'colour', which: 11, terminator: '\x1b\\' }],
];

/** Colours a daemon terminal reports: light text on a black background. */
const COLOURS = { 10: 'rgb:ffff/ffff/ffff', 11: 'rgb:0000/0000/0000' } as const;

/**
 * The bytes a terminal answers `query` with. `cursor` is the 1-based position (row, column); where
 * the daemon has no emulated screen to tell it, the top-left corner.
 */
export function queryAnswer(query: TerminalQuery, cursor?: { row: number; col: number }): string {
  switch (query.kind) {
    case 'cursor':
      return `\x1b[${cursor?.row ?? 1};${cursor?.col ?? 1}R`;
    case 'status':
      return '\x1b[0n';
    // A VT100 with advanced video, as xterm.js answers; a VT220-class secondary answer.
    case 'primary-attributes':
      return '\x1b[?1;2c';
    case 'secondary-attributes':
      return '\x1b[>0;276;0c';
    case 'colour':
      return `\x1b]${query.which};${COLOURS[query.which]}${query.terminator}`;
  }
}

/** A piece of output: bytes to pass on, or a query at that position. */
export type QueryPiece = { bytes: Buffer } | { query: TerminalQuery };

/** Streaming filter that takes queries out of a terminal's output, also when one is split across reads. */
export class QueryFilter {
  private pending = Buffer.alloc(0);

  /** True while bytes are held back because they may start a query. */
  get holding(): boolean {
    return this.pending.length > 0;
  }

  /** Filters one chunk; a possible query cut at its end is held until the next chunk. */
  push(chunk: Buffer): QueryPiece[] {
    const data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = Buffer.alloc(0);
    const pieces: QueryPiece[] = [];
    let from = 0;
    for (let at = data.indexOf(ESC); at >= 0; at = data.indexOf(ESC, at + 1)) {
      const match = matchAt(data, at);
      if (match === 'prefix') {
        if (at > from) pieces.push({ bytes: data.subarray(from, at) });
        this.pending = Buffer.from(data.subarray(at));
        return pieces;
      }
      if (!match) continue;
      if (at > from) pieces.push({ bytes: data.subarray(from, at) });
      pieces.push({ query: match.query });
      from = at + match.length;
      at = from - 1;
    }
    if (from < data.length) pieces.push({ bytes: data.subarray(from) });
    return pieces;
  }

  /** Releases held bytes as they are (nothing more will complete them). */
  flush(): Buffer {
    const held = this.pending;
    this.pending = Buffer.alloc(0);
    return held;
  }
}

/** Bytes that may follow `ESC [` in a query (`6`, `5`, `c`, `0`, `>`), and `ESC ]` (`1`). */
const AFTER_CSI = new Set([0x36, 0x35, 0x63, 0x30, 0x3e]);
const AFTER_OSC = 0x31;

/**
 * The query starting at `at`, `prefix` when the data ends inside one, else undefined. The first two
 * bytes after ESC rule out almost every other sequence at once: output full of colours or cursor
 * moves costs a byte look-up per ESC, not a comparison with every query (2340 `ESC[1000L` went from
 * ~10 ms to well under the marker filter's ~1.3 ms).
 */
function matchAt(data: Buffer, at: number): { query: TerminalQuery; length: number } | 'prefix' | undefined {
  const second = data[at + 1];
  if (second === undefined) return 'prefix';
  if (second !== 0x5b && second !== 0x5d) return undefined;
  const third = data[at + 2];
  if (third === undefined) return 'prefix';
  if (second === 0x5b ? !AFTER_CSI.has(third) : third !== AFTER_OSC) return undefined;
  const available = data.length - at;
  let prefix = false;
  for (const [bytes, query] of QUERIES) {
    const length = Math.min(bytes.length, available);
    let same = true;
    for (let i = 3; i < length && same; i++) same = data[at + i] === bytes[i];
    if (!same || bytes[1] !== second || bytes[2] !== third) continue;
    if (length === bytes.length) return { query, length };
    prefix = true;
  }
  return prefix ? 'prefix' : undefined;
}

/** Longest an answer waits for the program that asked to read it; then it is dropped. */
export const ANSWER_WAIT_MS = 2_000;
/** Interval of the checks for a reader. */
const ANSWER_POLL_MS = 10;

/** Who reads the terminal now, as a terminal's answers need to know. */
export interface AnswerTarget {
  /** True when the daemon's shell waits at its own prompt: an answer would be typed into its command line. */
  atPrompt(): boolean;
  /** True when a process of the foreground group waits reading the terminal; undefined when /proc cannot tell. */
  readerWaits(): boolean | undefined;
  /** Types the answer. */
  write(answer: string): void;
}

/**
 * Answers on their way to the program that asked. An answer is typed only once a process of the
 * foreground group is seen reading the terminal on two checks in a row, and never into the shell's
 * own command line: a program that asked and exited without reading (`printf '\e[6n'` in the shell)
 * leaves nobody to read it, and a terminal that typed it anyway would put `^[[1;1R` before the next
 * command. Answers still waiting when the shell's prompt comes back are dropped.
 */
export class QueryAnswers {
  private readonly waiting: Array<{ answer: Promise<string>; until: number }> = [];
  private timer: NodeJS.Timeout | undefined;
  private seen = 0;

  constructor(private readonly target: AnswerTarget) {}

  /** Queues the answer to a query just seen. */
  add(answer: Promise<string>): void {
    if (this.target.atPrompt()) return;
    this.waiting.push({ answer, until: Date.now() + ANSWER_WAIT_MS });
    this.schedule();
  }

  /** Drops every waiting answer (the shell's prompt came back, the terminal ended). */
  drop(): void {
    this.waiting.length = 0;
    this.seen = 0;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.timer || this.waiting.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.check();
    }, ANSWER_POLL_MS);
    this.timer.unref();
  }

  private check(): void {
    const now = Date.now();
    while (this.waiting.length > 0 && this.waiting[0]!.until < now) this.waiting.shift();
    if (this.waiting.length === 0 || this.target.atPrompt()) {
      this.drop();
      return;
    }
    const reader = this.target.readerWaits();
    this.seen = reader === false ? 0 : this.seen + 1;
    if (this.seen >= 2 || reader === undefined) {
      const ready = this.waiting.splice(0);
      this.seen = 0;
      // In order: each answer is typed once the ones before it were.
      void ready
        .reduce(
          (previous, next) => previous.then(() => next.answer.then((answer) => this.target.write(answer))),
          Promise.resolve(),
        )
        .catch(() => undefined);
      return;
    }
    this.schedule();
  }
}
