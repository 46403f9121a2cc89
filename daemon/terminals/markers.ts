/**
 * The daemon's private OSC 133 sequences (docs/terminals.md): the prompt marker its `PROMPT_COMMAND`
 * prints before each prompt, and the start and end markers around a `terminal/run` command. Each
 * carries the terminal's secret, so only the daemon's own sequences are recognised and stripped;
 * a program printing any other OSC 133 passes through untouched. Pure: no I/O.
 */
import { randomBytes } from 'node:crypto';

const ESC = 0x1b;
const BEL = 0x07;
/** Every private sequence starts with this. */
const INTRO = Buffer.from('\x1b]133;');
/** Longest private sequence; a longer OSC is not ours and is released. */
const MAX_SEQUENCE = 160;

/** A fresh terminal secret (hex). */
export function newSecret(): string {
  return randomBytes(8).toString('hex');
}

/** A fresh nonce for one `terminal/run` (hex). */
export function newNonce(): string {
  return randomBytes(6).toString('hex');
}

/** The shell functions that print a run's start and end markers (defined by the prompt command). */
const START_FUNCTION = '__execd_s';
const END_FUNCTION = '__execd_e';
/** The variable the last line of a run's `eval` sets to the command's status (see `runLine`). */
const STATUS_VARIABLE = '__execd_st';

/**
 * Under `set -e` a function that returns non-zero ends the shell, and the prompt of a user's shell
 * survives what `set -e` exempts (`false && true`, `! true`): there the marker functions return 0,
 * so `$?` at the start of the next run reads 0 instead of the last status.
 */
const ZERO_UNDER_ERREXIT = 'case $- in *e*) return 0 ;; esac';

/** `printf` of a run's start (`s`) or end (`e`) marker with the nonce (and status) as arguments. */
function markerPrintf(secret: string, kind: 's' | 'e', args: string): string {
  return `printf '\\033]133;execd=${secret};${kind};%s${kind === 'e' ? ';%s' : ''}\\007' ${args}`;
}

/** Payload of the boot marker: the shell has read its setup line. */
const BOOT_PAYLOAD = 'execd-boot';

/**
 * The `PROMPT_COMMAND` a daemon shell starts with; it holds no secret, because a program can read
 * the environment its shell started with (`/proc/$PPID/environ`), and the secret never
 * travels as terminal input either, where a reader of the pty could catch it. At the first prompt
 * it un-exports itself, reads `setupLine` from `setupFile` (a file of the daemon's, readable only
 * by the session's own commands, which the daemon removes at the boot marker), prints the boot
 * marker and evaluates the line, which defines the real prompt command. Nothing of that line is
 * echoed, kept in history or exported.
 */
export function bootPromptCommand(setupFile: string): string {
  return (
    `export -n PROMPT_COMMAND; __execd_boot=$(<${ansiCQuote(setupFile)}); ` +
    `printf '\\033]133;${BOOT_PAYLOAD}\\007'; ` +
    'eval "$__execd_boot"; unset __execd_boot'
  );
}

/**
 * The real `PROMPT_COMMAND` of a daemon terminal, set by `setupLine`: prints
 * `OSC 133 ; D ; <status> ; execd=<secret> BEL`, (re)defines the two marker functions the run line
 * calls (each returns the status it was called with), keeps itself un-exported and keeps lines
 * that start with a space out of the history (the run line does), so a user's change of either
 * cannot leak the secret or the run's nonce.
 */
export function promptCommand(secret: string): string {
  return (
    `printf '\\033]133;D;%s;execd=${secret}\\007' "$?"; ` +
    // Each function gives back the status it was called with, so `$?` goes on from run to run as
    // in any shell (after `false`, the next run's `echo $?` prints 1) and the prompt marker after a
    // run reports the command's status.
    `${START_FUNCTION}() { local __execd_status=$?; unset ${STATUS_VARIABLE}; ${markerPrintf(secret, 's', '"$1"')}; ${ZERO_UNDER_ERREXIT}; return $__execd_status; }; ` +
    // `$2` is eval's status: 0 when the command's line ran to its end (its own status is then in
    // the variable), else what stopped it (a syntax error).
    `${END_FUNCTION}() { local __execd_status=$2; [ "$2" = 0 ] && __execd_status=\${${STATUS_VARIABLE}:-0}; unset ${STATUS_VARIABLE}; ` +
    `${markerPrintf(secret, 'e', '"$1" "$__execd_status"')}; ${ZERO_UNDER_ERREXIT}; return $__execd_status; }; ` +
    'export -n PROMPT_COMMAND; ' +
    'case ":$HISTCONTROL:" in *:ignorespace:*|*:ignoreboth:*) ;; *) HISTCONTROL="ignorespace${HISTCONTROL:+:$HISTCONTROL}" ;; esac'
  );
}

/** The setup line the shell reads at its first prompt: the real prompt command, then its first run. */
export function setupLine(secret: string): string {
  return `PROMPT_COMMAND=${ansiCQuote(promptCommand(secret))}; eval "$PROMPT_COMMAND"\n`;
}

/** Bash `$'…'` quoting of any text as one line (newlines and controls escaped; `!` is safe in it). */
export function ansiCQuote(text: string): string {
  let out = "$'";
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (char === '\\') out += '\\\\';
    else if (char === "'") out += "\\'";
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += char;
  }
  return `${out}'`;
}

/**
 * The line typed for a `terminal/run`: the start marker, the command evaluated in the shell itself
 * (so `cd` and `export` persist), the end marker with its exit status. The evaluated text ends by
 * saving the command's status in a variable, so `eval` itself returns 0 and `set -e` ends the
 * shell only where it would end it for the command typed at the prompt. Typed only while the
 * daemon's own shell is at its prompt (see run.ts), so the marker functions its prompt command
 * defined exist and the line carries the nonce but never the secret. The leading space keeps it out
 * of the history. Ends with a carriage return; sent as a bracketed paste when the shell's readline
 * has paste mode on (readline then inserts the line at once instead of key by key).
 */
export function runLine(nonce: string, command: string, options: { bracketedPaste: boolean }): string {
  // The blank line ends the command even when its last line ends in a backslash.
  const evaluated = `${command}\n\n${STATUS_VARIABLE}=$?`;
  const line = ` ${START_FUNCTION} ${nonce}; eval ${ansiCQuote(evaluated)}; ${END_FUNCTION} ${nonce} $?`;
  return options.bracketedPaste ? `\x1b[200~${line}\x1b[201~\r` : `${line}\r`;
}

/** A private sequence found in the output. */
export type MarkerEvent =
  | { kind: 'boot' }
  | { kind: 'prompt'; status: number }
  | { kind: 'start'; nonce: string }
  | { kind: 'end'; nonce: string; status: number };

/** Parses the payload between `ESC ] 133 ;` and BEL; undefined when it is not this terminal's. */
export function parseMarker(payload: string, secret: string): MarkerEvent | undefined {
  if (payload === BOOT_PAYLOAD) return { kind: 'boot' };
  const tag = `execd=${secret}`;
  const parts = payload.split(';');
  if (parts[0] === 'D' && parts.length === 3 && parts[2] === tag) return { kind: 'prompt', status: Number(parts[1]) };
  if (parts[0] !== tag) return undefined;
  if (parts[1] === 's' && parts.length === 3) return { kind: 'start', nonce: parts[2]! };
  if (parts[1] === 'e' && parts.length === 4) return { kind: 'end', nonce: parts[2]!, status: Number(parts[3]) };
  return undefined;
}

/** A piece of filtered output: bytes to pass on, or a marker at the current position. */
export type FilteredPiece = { bytes: Buffer } | { marker: MarkerEvent };

/**
 * Streaming filter of a terminal's raw output: removes this terminal's private sequences (also when
 * they are split across reads) and reports them in order between the bytes around them.
 */
export class MarkerFilter {
  private pending = Buffer.alloc(0);

  constructor(private readonly secret: string) {}

  /** True while bytes are held back because they may start a private sequence. */
  get holding(): boolean {
    return this.pending.length > 0;
  }

  /** Filters one chunk; a possible sequence cut at its end is held until the next chunk. */
  push(chunk: Buffer): FilteredPiece[] {
    const data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = Buffer.alloc(0);
    const pieces: FilteredPiece[] = [];
    let from = 0;
    let search = 0;
    for (;;) {
      const at = data.indexOf(ESC, search);
      if (at < 0) break;
      const available = data.length - at;
      const introLength = Math.min(available, INTRO.length);
      if (data.compare(INTRO, 0, introLength, at, at + introLength) !== 0) {
        search = at + 1;
        continue;
      }
      if (available <= INTRO.length) {
        // A possible start of a sequence at the very end: hold it.
        this.hold(pieces, data, from, at);
        return pieces;
      }
      const bel = data.indexOf(BEL, at + INTRO.length);
      if (bel < 0) {
        if (available < MAX_SEQUENCE) {
          this.hold(pieces, data, from, at);
          return pieces;
        }
        search = at + 1;
        continue;
      }
      const marker =
        bel - at <= MAX_SEQUENCE
          ? parseMarker(data.subarray(at + INTRO.length, bel).toString('latin1'), this.secret)
          : undefined;
      if (!marker) {
        search = at + 1;
        continue;
      }
      if (at > from) pieces.push({ bytes: data.subarray(from, at) });
      pieces.push({ marker });
      from = bel + 1;
      search = from;
    }
    if (from < data.length) pieces.push({ bytes: data.subarray(from) });
    return pieces;
  }

  /** Releases held bytes as they are (no more output will complete them). */
  flush(): Buffer {
    const held = this.pending;
    this.pending = Buffer.alloc(0);
    return held;
  }

  private hold(pieces: FilteredPiece[], data: Buffer, from: number, at: number): void {
    if (at > from) pieces.push({ bytes: data.subarray(from, at) });
    this.pending = Buffer.from(data.subarray(at));
  }
}
