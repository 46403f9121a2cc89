/**
 * Cutting terminal output into pieces the emulator parses in one step each. The cost
 * of a byte depends on what it does: text costs little, but a sequence that touches the whole
 * screen (insert or delete lines, erase, scroll, the alignment test `ESC # 8`, a reset, switching
 * to the alternate screen, repeat a character) costs up to cols × rows cells, 10-20 ms on a
 * 1000×1000 terminal. Each piece holds at most one such sequence, at its end, and at most
 * `maxBytes`, so no piece costs more than one screenful of work. Pure.
 */

const ESC = 0x1b;

/** CSI final bytes of the sequences that may touch many cells (IL DL SU SD ED EL ICH DCH ECH REP). */
const HEAVY_CSI_FINALS = new Set([0x4c, 0x4d, 0x53, 0x54, 0x4a, 0x4b, 0x40, 0x50, 0x58, 0x62]);
/** Longest CSI sequence looked at; a longer one is the emulator's to reject. */
const MAX_CSI = 64;

/**
 * Where the heavy sequence that starts at `at` (an ESC) ends (the offset just past it), or -1
 * when the bytes there are not a heavy sequence (or it is cut off by the end of `data`).
 */
function heavyEnd(data: Buffer, at: number): number {
  const next = data[at + 1];
  if (next === 0x63) return at + 2; // ESC c: full reset
  if (next === 0x23 && data[at + 2] === 0x38) return at + 3; // ESC # 8: fill the screen with E
  if (next !== 0x5b) return -1;
  for (let i = at + 2; i < Math.min(data.length, at + MAX_CSI); i++) {
    const byte = data[i]!;
    if (byte >= 0x40 && byte <= 0x7e) {
      // A private mode set or reset (`CSI ? 1049 h`) may switch screens; other finals by the table.
      if (byte === 0x68 || byte === 0x6c) return data[at + 2] === 0x3f ? i + 1 : -1;
      return HEAVY_CSI_FINALS.has(byte) ? i + 1 : -1;
    }
  }
  return -1;
}

/** Splits `data` into pieces of at most `maxBytes`, each with at most one heavy sequence, at its end. */
export function screenPieces(data: Buffer, maxBytes: number): Buffer[] {
  const pieces: Buffer[] = [];
  let from = 0;
  let search = 0;
  while (from < data.length) {
    const limit = Math.min(data.length, from + maxBytes);
    const esc = data.indexOf(ESC, search);
    if (esc < 0 || esc >= limit) {
      pieces.push(data.subarray(from, limit));
      from = limit;
      search = limit;
      continue;
    }
    const end = heavyEnd(data, esc);
    if (end < 0) {
      search = esc + 1;
      continue;
    }
    pieces.push(data.subarray(from, end));
    from = end;
    search = end;
  }
  return pieces;
}
