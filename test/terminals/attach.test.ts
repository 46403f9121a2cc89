/** `terminal/attach { offset: 0 }` of a full scrollback sends the backlog in bounded chunks with flow control (issue 27.21). */
import { describe, expect, test } from 'vitest';
import { DaemonStatus, TerminalAttach, TerminalOutput, TerminalSend } from '../../protocol/methods.js';
import type { TerminalOutputParams } from '../../protocol/terminal.js';
import { waitFor } from '../helpers/wait.js';
import { shellFixture } from './terminal-helpers.js';

const MIB = 1024 * 1024;

describe('attach backlog', () => {
  test("a person attached sees the command that was asked, not the daemon's wrapper line (issue 26.12)", async () => {
    const { daemon, sessionId, terminalId, run } = await shellFixture();
    const viewer = await daemon.session(sessionId);
    const seen: string[] = [];
    viewer.rpc.onNotification(TerminalOutput, (params) => seen.push(params.data));
    await viewer.call(TerminalAttach, { sessionId, terminalId });
    expect(await run('echo "asked $((6 * 7))"')).toMatchObject({ state: 'completed', output: 'asked 42\n' });
    await waitFor(() => seen.join('').includes('asked 42'), 'the output to reach the viewer');
    const shown = seen.join('');
    console.log(`an attached viewer saw: ${JSON.stringify(shown)}`);
    expect(shown).toContain('echo "asked $((6 * 7))"\r\n');
    expect(shown).not.toContain('__execd');
    expect(shown).not.toContain('eval');
  });

  test('a full 4 MiB scrollback of escape-heavy output reaches an attached client in order, in bounded notifications, without dropping it', async () => {
    // Unsent output past 2 MiB would drop the client; the backlog as one notification is far larger.
    const { daemon, client, sessionId, terminalId } = await shellFixture({ config: { maxUnsentBytes: 2 * MIB } });
    const printed = await client.call(TerminalSend, {
      sessionId,
      terminalId,
      // Control bytes are escaped in JSON (\u001b: 6 bytes each), so the notification grows ~5×.
      text: `head -c ${6 * MIB} /dev/zero | tr '\\0' '\\033'; echo`,
      submit: true,
      timeoutMs: 120_000,
    });
    expect(printed.terminal.outputBytes).toBeGreaterThan(6 * MIB);
    const viewer = await daemon.session(sessionId);
    const seen: TerminalOutputParams[] = [];
    viewer.rpc.onNotification(TerminalOutput, (params) => seen.push(params));
    const { nextOffset } = await viewer.call(TerminalAttach, { sessionId, terminalId, offset: 0 });
    const end = printed.terminal.outputBytes;
    await waitFor(() => {
      const last = seen.at(-1);
      return last !== undefined && last.offset + Buffer.byteLength(last.data) >= end;
    }, 'the whole backlog to arrive');
    let at = nextOffset;
    for (const params of seen) {
      expect(params.offset).toBe(at);
      at += Buffer.byteLength(params.data);
    }
    const largest = Math.max(...seen.map((params) => Buffer.byteLength(params.data)));
    console.log(`attach backlog: ${at - nextOffset} bytes in ${seen.length} notifications, largest ${largest} bytes`);
    expect(at - nextOffset).toBeGreaterThanOrEqual(4 * MIB - 64);
    expect(largest).toBeLessThanOrEqual(64 * 1024);
    // The client is still connected and served.
    expect(await viewer.call(DaemonStatus, {})).toBeDefined();
  }, 180_000);
});
