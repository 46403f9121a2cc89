/**
 * The audit log (`serve --audit-log`, SPEC §18) of a real daemon: a start and an end line per
 * command with who, what and how it ended, and never the output, an environment value or a token.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JobWait, SessionOpen, ShellRun, ShellStart } from '../../protocol/methods.js';
import { waitFor } from '../helpers/wait.js';
import { startObservedDaemon } from './helpers.js';

/** The audit log's lines, parsed. */
function auditLines(path: string): Array<Record<string, unknown>> {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const SECRET = 'sekrit-env-value-4242';
/** What the command prints of its own: computed by the shell, so the command text does not hold it. */
const OUTPUT_MARK = 'printed-42-mark';
const PRINT_MARK = 'echo printed-$((40 + 2))-mark';

describe('audit log', { timeout: 120_000 }, () => {
  it('writes a start and an end line per command, with no output, env value or token', async () => {
    const { daemon, auditPath } = await startObservedDaemon();
    const client = await daemon.connect({ clientName: 'audit-test-agent' });
    await client.call(SessionOpen, { sessionId: 'audited', cwd: daemon.dir, env: { SESSION_SECRET: SECRET } });
    // A command that prints a secret from its environment, and output of its own.
    const printed = await client.call(ShellRun, {
      sessionId: 'audited',
      command: `echo "$API_KEY $SESSION_SECRET"; ${PRINT_MARK}; exit 4`,
      env: { API_KEY: SECRET },
      requestKey: 'audit-key-1',
    });
    expect(printed.stdout.text).toBe(`${SECRET} ${SECRET}\n${OUTPUT_MARK}\n`);
    expect(printed).toMatchObject({ exitCode: 4 });
    const timedOut = await client.call(ShellRun, { sessionId: 'audited', command: 'sleep 30', timeoutMs: 200 });
    expect(timedOut).toMatchObject({ timedOut: true });
    const { jobId } = await client.call(ShellStart, { sessionId: 'audited', command: 'echo job-output' });
    await client.call(JobWait, { sessionId: 'audited', jobId });
    const long = `: ${'x'.repeat(5_000)}`;
    await client.call(ShellRun, { sessionId: 'audited', command: long });

    await waitFor(() => auditLines(auditPath).length === 8, 'eight audit lines');
    const lines = auditLines(auditPath);
    const text = readFileSync(auditPath, 'utf8');
    for (const forbidden of [
      SECRET,
      OUTPUT_MARK,
      'job-output\n',
      readFileSync(join(daemon.stateDir, 'token'), 'utf8').trim(),
      readFileSync(join(daemon.stateDir, 'admin-token'), 'utf8').trim(),
    ])
      expect(text).not.toContain(forbidden);

    const byId = new Map<unknown, Array<Record<string, unknown>>>();
    for (const line of lines) byId.set(line.id, [...(byId.get(line.id) ?? []), line]);
    expect([...byId.values()].map((pair) => pair.map((line) => line.event))).toEqual(
      Array.from({ length: 4 }, () => ['command.start', 'command.end']),
    );
    const [start, end] = byId.get(1)!;
    expect(start).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
      event: 'command.start',
      id: 1,
      session: 'audited',
      kind: 'run',
      requestKey: 'audit-key-1',
      client: 'audit-test-agent',
      transport: 'unix',
      mode: 'danger-full-access',
      cwd: daemon.dir,
      command: `echo "$API_KEY $SESSION_SECRET"; ${PRINT_MARK}; exit 4`,
      pid: printed.pid,
    });
    expect(end).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
      event: 'command.end',
      id: 1,
      session: 'audited',
      kind: 'run',
      requestKey: 'audit-key-1',
      pid: printed.pid,
      result: 'error',
      exitCode: 4,
      signal: null,
      timedOut: false,
      denied: false,
      durationMs: expect.any(Number) as unknown,
      outputBytes: Buffer.byteLength(`${SECRET} ${SECRET}\n${OUTPUT_MARK}\n`),
    });
    expect(byId.get(2)![1]).toMatchObject({ result: 'timeout', timedOut: true, pid: timedOut.pid });
    expect(byId.get(3)).toMatchObject([
      { kind: 'job', command: 'echo job-output', pid: expect.any(Number) as unknown },
      { kind: 'job', result: 'ok', exitCode: 0, outputBytes: 'job-output\n'.length },
    ]);
    // The command text is cut at 4 KiB, and says so.
    const cut = byId.get(4)![0]!;
    expect(cut).toMatchObject({ commandTruncated: true, commandBytes: long.length });
    expect(cut.command).toBe(long.slice(0, 4096));
  });

  it("is rotated by size with the daemon log's bounds: a flood of commands keeps at most (logMaxFiles + 1) × logMaxBytes", async () => {
    const { daemon, auditPath } = await startObservedDaemon({ config: { logMaxBytes: 4_096, logMaxFiles: 1 } });
    const client = await daemon.session('flood');
    for (let n = 0; n < 40; n++) await client.call(ShellRun, { sessionId: 'flood', command: `echo ${n}` });
    await waitFor(() => readFileSync(auditPath, 'utf8').includes('"command":"echo 39"'), 'the last start line');
    await waitFor(
      () => readFileSync(auditPath, 'utf8').includes('"event":"command.end","id":40,'),
      'the last end line',
    );
    expect(statSync(auditPath).size).toBeLessThanOrEqual(4_096);
    expect(statSync(`${auditPath}.1`).size).toBeLessThanOrEqual(4_096);
    expect(existsSync(`${auditPath}.2`)).toBe(false);
    // Whole lines on both sides of a rotation.
    for (const file of [auditPath, `${auditPath}.1`]) expect(auditLines(file).length).toBeGreaterThan(0);
  });
});
