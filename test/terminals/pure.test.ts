/** Unit tests of the terminal's pure pieces: the private marker filter, CR LF, the stdin-wait rule, the journal, the ring. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, onTestFinished, test } from 'vitest';
import { CrlfStream, crlfToLf } from '../../daemon/terminals/crlf.js';
import { ansiCQuote, MarkerFilter, parseMarker, runLine, type FilteredPiece } from '../../daemon/terminals/markers.js';
import { boundedTail } from '../../daemon/terminals/output.js';
import { Scrollback } from '../../daemon/terminals/scrollback.js';
import { StdinWaitDetector } from '../../daemon/terminals/stdin-wait.js';
import {
  replayTerminalJournal,
  TerminalJournal,
  type TerminalRecord,
} from '../../daemon/terminals/terminal-journal.js';

const SECRET = 'abc123';

function filterAll(chunks: string[]): { text: string; markers: unknown[] } {
  const filter = new MarkerFilter(SECRET);
  const pieces: FilteredPiece[] = chunks.flatMap((chunk) => filter.push(Buffer.from(chunk, 'latin1')));
  pieces.push({ bytes: filter.flush() });
  return {
    text: pieces.map((piece) => ('bytes' in piece ? piece.bytes.toString('latin1') : '|')).join(''),
    markers: pieces.flatMap((piece) => ('marker' in piece ? [piece.marker] : [])),
  };
}

describe('MarkerFilter', () => {
  const prompt = `\x1b]133;D;0;execd=${SECRET}\x07`;
  const end = `\x1b]133;execd=${SECRET};e;n1;3\x07`;

  test('strips this terminal secret markers and reports them in place', () => {
    expect(filterAll([`out${end}${prompt}$ `])).toEqual({
      text: 'out||$ ',
      markers: [
        { kind: 'end', nonce: 'n1', status: 3 },
        { kind: 'prompt', status: 0 },
      ],
    });
  });

  test('finds a marker split across chunks at any byte', () => {
    const whole = `a${prompt}b`;
    for (let cut = 1; cut < whole.length; cut++) {
      expect(filterAll([whole.slice(0, cut), whole.slice(cut)])).toEqual({
        text: 'a|b',
        markers: [{ kind: 'prompt', status: 0 }],
      });
    }
  });

  test('passes other OSC 133 sequences, other secrets and plain escapes through', () => {
    const foreign = `\x1b]133;D;0\x07\x1b]133;D;0;execd=other\x07\x1b[31mred\x1b`;
    expect(filterAll([foreign])).toEqual({ text: foreign, markers: [] });
  });

  test('parseMarker rejects malformed payloads', () => {
    expect(parseMarker(`execd=${SECRET};s;n`, SECRET)).toEqual({ kind: 'start', nonce: 'n' });
    expect(parseMarker(`execd=${SECRET};x;n`, SECRET)).toBeUndefined();
    expect(parseMarker('D;0', SECRET)).toBeUndefined();
  });
});

describe('run line', () => {
  test('quotes any command as one line', () => {
    expect(ansiCQuote("it's\n\\ok!")).toBe("$'it\\'s\\x0a\\\\ok!'");
    const line = runLine('n9', 'echo hi', { bracketedPaste: false });
    expect(line.endsWith('\r')).toBe(true);
    expect(line.slice(0, -1)).not.toMatch(/[\r\n]/);
    expect(line).toContain("eval $'echo hi\\x0a\\x0a__execd_st=$?'");
    // The leading space keeps it out of the history; the secret is never part of it.
    expect(runLine('n9', 'true', { bracketedPaste: false })).toBe(
      " __execd_s n9; eval $'true\\x0a\\x0a__execd_st=$?'; __execd_e n9 $?\r",
    );
    expect(runLine('n9', 'true', { bracketedPaste: true })).toBe(
      "\x1b[200~ __execd_s n9; eval $'true\\x0a\\x0a__execd_st=$?'; __execd_e n9 $?\x1b[201~\r",
    );
  });
});

describe('boundedTail', () => {
  test('keeps short output whole and cuts long output to its last bytes, never inside a character', () => {
    expect(boundedTail(Buffer.from('a\r\nb\r\n'), 10)).toEqual({ text: 'a\nb\n', truncated: false, bytes: 4 });
    // 'é' is two bytes: a cut that would start inside it starts after it.
    expect(boundedTail(Buffer.from('xé\r\nyz'), 4)).toEqual({ text: '\nyz', truncated: true, bytes: 6 });
    expect(boundedTail(Buffer.from('x\r\nyz'), 3)).toEqual({ text: '\nyz', truncated: true, bytes: 4 });
  });
});

describe('CR LF', () => {
  test('converts complete and streamed text, a CR split from its LF included', () => {
    expect(crlfToLf(Buffer.from('a\r\nb\rc\r\n')).toString()).toBe('a\nb\rc\n');
    const stream = new CrlfStream();
    const out = [stream.push(Buffer.from('a\r')), stream.push(Buffer.from('\nb\r')), stream.end()];
    expect(Buffer.concat(out).toString()).toBe('a\nb\r');
  });
});

describe('StdinWaitDetector', () => {
  test('a fresh wait counts on the second poll that sees it unchanged', () => {
    const detector = new StdinWaitDetector([]);
    expect(detector.poll([{ tid: 5, switches: 10 }])).toBe(false);
    expect(detector.poll([{ tid: 5, switches: 10 }])).toBe(true);
  });

  test('a wait in place before the write does not count until it was seen to end', () => {
    const detector = new StdinWaitDetector([{ tid: 5, switches: 10 }]);
    expect(detector.poll([{ tid: 5, switches: 10 }])).toBe(false);
    expect(detector.poll([{ tid: 5, switches: 10 }])).toBe(false);
    expect(detector.poll([{ tid: 5, switches: 12 }])).toBe(false);
    expect(detector.poll([{ tid: 5, switches: 12 }])).toBe(true);
  });

  test('a thread that woke between polls starts over', () => {
    const detector = new StdinWaitDetector([]);
    detector.poll([{ tid: 5, switches: 1 }]);
    expect(detector.poll([{ tid: 5, switches: 2 }])).toBe(false);
    expect(detector.poll([])).toBe(false);
  });
});

/** A journaled terminal `term-<n>`. */
function journalRecord(n: number, pid = 10): TerminalRecord {
  return {
    id: `term-${n}`,
    n,
    sessionId: 's',
    argv: ['bash'],
    cwd: '/',
    pid,
    cols: 80,
    rows: 24,
    startedAt: '2026-12-03T03:00:00.000Z',
  };
}

describe('terminal journal', () => {
  test('replays opens, exits and forgets; ids continue past every number seen; a torn line is ignored', () => {
    const record = journalRecord(4);
    const lines = [
      { op: 'next', n: 3 },
      { op: 'open', record },
      { op: 'open', record: { ...record, id: 'term-5', n: 5 } },
      { op: 'exit', id: 'term-4', exit: { exitCode: 0, signal: null, exitedAt: '2026-12-03T03:00:01.000Z' } },
      { op: 'forget', id: 'term-5' },
    ];
    const state = replayTerminalJournal(lines.map((line) => JSON.stringify(line)).join('\n') + '\n{"op":"ope');
    expect(state.nextNumber).toBe(6);
    expect(state.records).toHaveLength(1);
    expect(state.records[0]!.exit?.exitCode).toBe(0);
    expect(state.skipped).toBe(1);
  });

  test('skips and counts damaged lines anywhere, keeping every valid entry around them', () => {
    const record = journalRecord(2);
    const lines = [
      JSON.stringify({ op: 'open', record }),
      'null',
      '{"op":"open","record":null}',
      JSON.stringify({ op: 'open', record: { ...record, id: 'term-9', n: 9, startedAt: 'yesterday' } }),
      JSON.stringify({ op: 'exit', id: 'term-2', exit: { exitCode: 'zero', signal: null, exitedAt: 'now' } }),
      JSON.stringify({ op: 'rename', id: 'term-2' }),
      JSON.stringify({ op: 'open', record: { ...record, id: 'term-3', n: 3 } }),
    ];
    const state = replayTerminalJournal(lines.join('\n'));
    expect(state.skipped).toBe(5);
    expect(state.records.map((kept) => kept.id)).toEqual(['term-2', 'term-3']);
    expect(state.records[0]!.exit).toBeUndefined();
    // An invalid line's number does not move the ids on.
    expect(state.nextNumber).toBe(4);
  });
});

describe('terminal journal compaction', () => {
  test('a history far longer than the table is rewritten to the table', () => {
    const dir = mkdtempSync(join(tmpdir(), 'execd-journal-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'terminals.journal');
    const record = journalRecord(7, 1);
    let next = 8;
    const journal = new TerminalJournal(path, () => ({ nextNumber: next, records: [record] }));
    journal.rewrite({ nextNumber: next, records: [record] });
    for (let i = 0; i < 2_000; i++) journal.append({ op: 'next', n: ++next });
    journal.close();
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    expect(lines.length).toBeLessThan(1_100);
    const state = replayTerminalJournal(readFileSync(path, 'utf8'));
    expect(state.nextNumber).toBe(next);
    expect(state.records.map((r) => r.id)).toEqual(['term-7']);
  });
});

describe('Scrollback', () => {
  test('reads by offset, reports dropped bytes, cuts on characters and holds a trailing CR', () => {
    const ring = new Scrollback(8);
    ring.append(Buffer.from('ab\r\ncdé\r'));
    const read = ring.read(0, 100);
    expect(read.droppedBytes).toBe(1);
    expect(read.text).toBe('b\ncdé');
    expect(read.nextOffset).toBe(8);
    ring.append(Buffer.from('\nz'));
    expect(ring.read(read.nextOffset, 100).text).toBe('\nz');
  });
});
