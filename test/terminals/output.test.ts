/**
 * Terminal output against a real daemon and a real PTY: bounded run results with a byte-exact
 * spill file, the scrollback ring's offsets, readers that reconnect, attached clients, the screen view.
 */
import { readFileSync } from 'node:fs';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  TerminalAttach,
  TerminalDetach,
  TerminalOutput,
  TerminalRead,
  TerminalRun,
  TerminalSend,
} from '../../protocol/methods.js';
import type { TerminalOutputParams } from '../../protocol/terminal.js';
import { waitFor } from '../helpers/wait.js';
import { shellFixture } from './terminal-helpers.js';

describe('terminal output', () => {
  test('yes | head -c 5000000: bounded result, the whole output in the spill file, an old offset reports droppedBytes', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture({
      config: { maxOutputBytes: 10_000, terminalScrollbackBytes: 1_000_000 },
    });
    const started = Date.now();
    const result = await run('yes | head -c 5000000', { timeoutMs: 120_000 });
    console.log(`5 MB through the terminal in ${Date.now() - started} ms`);
    expect(result).toMatchObject({ state: 'completed', exitCode: 0, truncated: true, outputBytes: 5_000_000 });
    expect(Buffer.byteLength(result.output)).toBe(10_000);
    expect(result.output).toBe('y\n'.repeat(5_000));
    expect(result.outputSpillPath).toBeDefined();
    const spilled = readFileSync(result.outputSpillPath!);
    expect(spilled.length).toBe(5_000_000);
    expect(spilled.equals(Buffer.from('y\n'.repeat(2_500_000)))).toBe(true);

    const old = await client.call(TerminalRead, { sessionId, terminalId, offset: 0, maxBytes: 100 });
    expect(old.droppedBytes).toBeGreaterThan(5_000_000);
    expect(old.offset).toBe(old.droppedBytes);
    expect(old.text).toMatch(/^\n?(y\n)+/);
  });

  test('a reader that disconnected reads from its old offset on a new connection', async () => {
    const { daemon, client, sessionId, terminalId } = await shellFixture();
    const before = await client.call(TerminalRead, { sessionId, terminalId });
    const pending = client.call(TerminalSend, { sessionId, terminalId, text: 'sleep 2; echo done', submit: true });
    pending.catch(() => {});
    await waitFor(
      async () =>
        (await client.call(TerminalRead, { sessionId, terminalId, offset: before.nextOffset })).text.includes(
          'sleep 2',
        ),
      'the command to be echoed',
    );
    client.close();
    const again = await daemon.session(sessionId);
    const later = await waitFor(async () => {
      const read = await again.call(TerminalRead, { sessionId, terminalId, offset: before.nextOffset });
      return /^done$/m.test(read.text) ? read : undefined;
    }, 'done after the reconnect');
    expect(later.droppedBytes).toBe(0);
    expect(later.offset).toBe(before.nextOffset);
  });

  test('two attached clients receive the same bytes in order; detach stops them', async () => {
    const { daemon, client, sessionId, terminalId, run } = await shellFixture();
    const other = await daemon.session(sessionId);
    const seen: Record<string, TerminalOutputParams[]> = { a: [], b: [] };
    client.rpc.onNotification(TerminalOutput, (params) => seen.a!.push(params));
    other.rpc.onNotification(TerminalOutput, (params) => seen.b!.push(params));
    const a = await client.call(TerminalAttach, { sessionId, terminalId });
    const b = await other.call(TerminalAttach, { sessionId, terminalId, offset: a.nextOffset });
    expect(b.nextOffset).toBe(a.nextOffset);
    await run('for i in 1 2 3 4 5; do echo line$i; done');
    const joined = (list: TerminalOutputParams[]) => list.map((item) => item.data).join('');
    await waitFor(() => joined(seen.a!).includes('line5') && joined(seen.b!).includes('line5'), 'both clients');
    await waitFor(() => joined(seen.a!) === joined(seen.b!), 'the same bytes');
    // Offsets are contiguous: each notification starts where the previous one ended.
    let expected = a.nextOffset;
    for (const item of seen.a!) {
      expect(item.offset).toBe(expected);
      expected += Buffer.byteLength(item.data);
    }
    expect(joined(seen.a!)).toMatch(/line1\r\nline2\r\nline3\r\nline4\r\nline5\r\n/);
    expect(joined(seen.a!)).not.toContain('\x1b]133;');
    await other.call(TerminalDetach, { sessionId, terminalId });
    const count = seen.b!.length;
    await run('echo after-detach');
    await waitFor(() => joined(seen.a!).includes('after-detach'), 'the attached client');
    expect(seen.b!.length).toBe(count);
  });

  test("less on a long file: view 'screen' shows the first screenful; q returns to the prompt", async () => {
    const { daemon, client, sessionId, terminalId } = await shellFixture();
    const file = join(daemon.dir, 'long.txt');
    writeFileSync(file, Array.from({ length: 200 }, (_, i) => `row ${i + 1}`).join('\n') + '\n');
    const opened = await client.call(TerminalRun, { sessionId, terminalId, command: `less ${file}` });
    expect(opened.state).toBe('waiting_for_input');
    const screen = await client.call(TerminalRead, { sessionId, terminalId, view: 'screen' });
    const lines = screen.text.split('\n');
    expect(lines[0]).toBe('row 1');
    expect(lines).toContain('row 23');
    expect(screen.text).not.toContain('row 24\n');
    const quit = await client.call(TerminalSend, { sessionId, terminalId, text: 'q' });
    expect(quit.waitReason).toBe('prompt');
    const after = await client.call(TerminalRead, { sessionId, terminalId, view: 'screen' });
    expect(after.text).not.toContain('row 2\n');
  });
});
