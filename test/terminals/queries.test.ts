/**
 * Terminal queries (SPEC §9.1): a program that asks the terminal its cursor position, colours or
 * attributes gets the answer a terminal would give, and the query never shows in the output;
 * a query nobody reads (`printf '\e[6n'` in the shell) is not typed into the next command line.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { TerminalOpen, TerminalRead, TerminalSend } from '../../protocol/methods.js';
import { QueryFilter, queryAnswer, type QueryPiece } from '../../daemon/terminals/terminal-queries.js';
import { shellFixture } from './terminal-helpers.js';

/** Feeds `chunks` through one filter: the bytes passed on and the queries found, in order. */
function filtered(chunks: string[]): Array<string | QueryPiece> {
  const filter = new QueryFilter();
  const out: Array<string | QueryPiece> = [];
  const take = (pieces: QueryPiece[]) => {
    for (const piece of pieces) out.push('bytes' in piece ? piece.bytes.toString('latin1') : piece);
  };
  for (const chunk of chunks) take(filter.push(Buffer.from(chunk, 'latin1')));
  const rest = filter.flush();
  if (rest.length > 0) out.push(rest.toString('latin1'));
  return out;
}

/** Asks the terminal `sys.argv[1]` in raw mode and prints the answer's repr (up to its last byte). */
const ASK = `
import os, select, sys, termios, tty
query, last = sys.argv[1].encode().decode('unicode_escape'), sys.argv[2].encode().decode('unicode_escape')
old = termios.tcgetattr(0)
tty.setraw(0)
try:
    os.write(1, query.encode())
    answer = b''
    while not answer.endswith(last.encode()) and select.select([0], [], [], 5)[0]:
        answer += os.read(0, 1)
finally:
    termios.tcsetattr(0, termios.TCSADRAIN, old)
print(repr(answer.decode()))
`;

describe('the query filter', () => {
  test('takes queries out also when split across reads; colours and other sequences pass', () => {
    expect(filtered(['a\x1b[', '6nb'])).toEqual(['a', { query: { kind: 'cursor' } }, 'b']);
    expect(filtered(['\x1b]11;', '?\x1b', '\\x'])).toEqual([
      { query: { kind: 'colour', which: 11, terminator: '\x1b\\' } },
      'x',
    ]);
    expect(filtered(['\x1b[31mred\x1b[0m \x1b[6', 'q'])).toEqual(['\x1b[31mred\x1b[0m ', '\x1b[6q']);
    // A cut start that nothing completes is output as it was.
    expect(filtered(['end\x1b[>'])).toEqual(['end', '\x1b[>']);
    expect(queryAnswer({ kind: 'cursor' }, { row: 3, col: 7 })).toBe('\x1b[3;7R');
  });
});

describe('terminal queries', { timeout: 60_000 }, () => {
  test("printf '\\e[6n' in the shell: nothing shows, nothing is typed into the next command", async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const asked = await run(`printf '\\e[6n'; echo done`);
    expect(asked).toMatchObject({ state: 'completed', exitCode: 0, output: 'done\n' });
    expect(await run(`printf '\\e[6n'`)).toMatchObject({ state: 'completed', output: '' });
    const next = await run('echo "next $((6*7))"');
    expect(next).toMatchObject({ state: 'completed', exitCode: 0, output: 'next 42\n' });
    const stream = (await client.call(TerminalRead, { sessionId, terminalId, offset: 0 })).text;
    expect(stream).not.toContain('\x1b[6n');
    expect(stream).not.toContain('1;1R');
  });

  test('a program reading the answers gets the cursor, the colours and the attributes; colours stay in the output', async () => {
    const fixture = await shellFixture();
    const { run, daemon } = fixture;
    const script = join(daemon.dir, 'ask.py');
    writeFileSync(script, ASK);
    const ask = async (query: string, last: string) => {
      const result = await run(`python3 ${script} '${query}' '${last}'`);
      expect(result.state, query).toBe('completed');
      expect(result.output, query).not.toContain('\x1b[6n');
      return result.output.trim();
    };
    expect(await ask('\\x1b[6n', 'R')).toBe(String.raw`'\x1b[1;1R'`);
    expect(await ask('\\x1b]11;?\\x07', '\\x07')).toBe(String.raw`'\x1b]11;rgb:0000/0000/0000\x07'`);
    expect(await ask('\\x1b]10;?\\x1b\\\\', '\\\\')).toBe(String.raw`'\x1b]10;rgb:ffff/ffff/ffff\x1b\\'`);
    expect(await ask('\\x1b[c', 'c')).toBe(String.raw`'\x1b[?1;2c'`);
    // The shell's own read builtin is a reader too.
    const read = await run(`printf '\\e[5n'; IFS= read -rs -d n -t 5 status; echo "status=\${status#*[}"`);
    expect(read.output).toBe('status=0\n');
    // Colours are output like any other sequence.
    expect((await run(`printf '\\e[31mred\\e[0m\\n'`)).output).toBe('\x1b[31mred\x1b[0m\n');
  });

  test('with an emulated screen the cursor position is where the screen has it', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    // The screen emulator starts at the first screen read.
    await client.call(TerminalRead, { sessionId, terminalId, view: 'screen' });
    const at = await run(
      `clear; printf 'abc\\ndefgh'; printf '\\e[6n'; IFS= read -rs -d R -t 5 pos; echo; echo "pos=\${pos#*[}"`,
    );
    expect(at.output.endsWith('pos=2;6\n')).toBe(true);
  });

  test('an argv terminal answers too', async () => {
    const fixture = await shellFixture();
    const { client, sessionId, daemon } = fixture;
    const script = join(daemon.dir, 'ask.py');
    writeFileSync(script, ASK);
    const opened = await client.call(TerminalOpen, {
      sessionId,
      argv: ['python3', script, '\\x1b[6n', 'R'],
    });
    const id = opened.terminal.id;
    const ended = await client.call(TerminalSend, { sessionId, terminalId: id, text: '', timeoutMs: 10_000 });
    expect(ended.waitReason).toBe('session_exit');
    const all = (await client.call(TerminalRead, { sessionId, terminalId: id, offset: 0 })).text;
    expect(all).toContain(String.raw`'\x1b[1;1R'`);
    expect(all).not.toContain('\x1b[6n');
  });
});
