/**
 * A root daemon's confined commands hold no capability (SPEC §16), once per runner: the effective,
 * permitted, inheritable and ambient sets read 0 inside a confined run, a job and a terminal, and
 * a command that execs again (a new bash) gains none back. The bounding set reads 0 under
 * Landlock; bubblewrap (`--cap-drop ALL`) leaves it whole, and its `PR_SET_NO_NEW_PRIVS` is what
 * keeps an exec from gaining from it. Needs a root daemon: the
 * test's own process is root, as the machine and `.ci/run` run the suite.
 */
import { describe, expect, it } from 'vitest';
import { JobPeek, JobWait, ShellStart, TerminalOpen, TerminalRun } from '../../protocol/methods.js';
import { BACKENDS, sandboxedSession } from '../helpers/sandbox.js';

const SETS = "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status";
const NO_BOUNDING = 'CapBnd:\t0000000000000000\n';
const NONE =
  'CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n';

describe.each(BACKENDS)('capabilities under $name', (backend) => {
  /** What the sets read under this runner: bubblewrap keeps the bounding set (measured: 000001fffeffffff). */
  const expected = (text: string) =>
    backend.name === 'bwrap' ? text.replace(/^CapBnd:\t[0-9a-f]+\n/gm, NO_BOUNDING) : text;
  it("a root daemon's confined run, job and terminal hold no capability; its unconfined run keeps them", async () => {
    if (process.getuid?.() !== 0) throw new Error('this test needs a root daemon: run the suite as root');
    const { client } = await sandboxedSession(
      { mode: 'workspace-write', escalationTargets: ['danger-full-access'] },
      { config: backend.config },
    );
    const full = await client.run({ sessionId: 's1', command: SETS, sandboxPolicy: { mode: 'danger-full-access' } });
    console.log(`${backend.name} unconfined: ${full.stdout.text.replace(/\n/g, ' ')}`);
    expect(full.stdout.text).not.toContain('CapEff:\t0000000000000000');

    for (const mode of ['workspace-write', 'read-only'] as const) {
      const run = await client.run({ sessionId: 's1', command: `${SETS}; bash -c "${SETS}"`, sandboxPolicy: { mode } });
      console.log(`${backend.name} ${mode}: ${run.stdout.text.split('\n').slice(0, 5).join(' ')}`);
      expect(expected(run.stdout.text), mode).toBe(NONE + NONE);
    }
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: SETS });
    expect(await client.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 30_000 })).toMatchObject({
      status: 'completed',
    });
    expect(expected((await client.call(JobPeek, { sessionId: 's1', jobId })).stdout.text)).toBe(NONE);

    const opened = await client.call(TerminalOpen, { sessionId: 's1' });
    const inTerminal = await client.call(TerminalRun, {
      sessionId: 's1',
      terminalId: opened.terminal.id,
      command: `${SETS} </dev/null`,
    });
    expect(inTerminal.exitCode).toBe(0);
    expect(expected(inTerminal.output)).toBe(NONE);
  });
});
