/** A `terminal/run`'s spill file is pageable from its session (issue 27.4); a spill that cannot be written is reported (27.22). */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, onTestFinished, test } from 'vitest';
import { OutputRead, TerminalOpen, TerminalRun } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { shellFixture } from './terminal-helpers.js';

describe('terminal run spill', () => {
  test('output/read pages the outputSpillPath of a terminal/run from the same session', async () => {
    const { run, client, sessionId } = await shellFixture();
    const result = await run(`head -c 300000 /dev/zero | tr '\\0' a; echo`);
    expect(result.truncated).toBe(true);
    expect(result.outputSpillPath).toBeDefined();
    let text = '';
    let offset = 0;
    for (;;) {
      const page = await client.call(OutputRead, { sessionId, path: result.outputSpillPath!, offset });
      text += page.text;
      offset = page.nextOffset;
      if (page.eof) break;
    }
    console.log(`output/read paged ${text.length} characters of a terminal run's spill file`);
    expect(text).toBe(`${'a'.repeat(300000)}\n`);
  });

  test('on a full disk a terminal run that spills answers its tail and saveError', async () => {
    const base = mkdtempSync(join(tmpdir(), 'execd-term-disk-'));
    const stateDir = join(base, 'state');
    mkdirSync(stateDir, { mode: 0o700 });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0700', 'tmpfs', stateDir]);
    onTestFinished(() => {
      execFileSync('umount', ['-l', stateDir]);
      rmSync(base, { recursive: true, force: true });
    });
    const daemon = await startDaemon({ stateDir, config: { graceMs: 500 } });
    const client = await daemon.session('s1');
    const { terminal } = await client.call(TerminalOpen, { sessionId: 's1' });
    execFileSync('bash', ['-c', 'head -c 64M /dev/zero > "$0" 2>/dev/null; true', join(stateDir, 'filler')]);
    const result = await client.call(TerminalRun, {
      sessionId: 's1',
      terminalId: terminal.id,
      command: `head -c 300000 /dev/zero | tr '\\0' b; echo`,
    });
    console.log(`terminal run on a full disk: truncated ${result.truncated}, saveError "${result.saveError}"`);
    expect(result).toMatchObject({ state: 'completed', exitCode: 0, truncated: true });
    expect(result.outputSpillPath).toBeUndefined();
    expect(result.saveError).toMatch(/ENOSPC|no space/i);
    expect(result.output.endsWith('bbbb\n')).toBe(true);
  });
});
