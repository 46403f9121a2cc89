/**
 * No confined command of one session writes another open session's workspace or private temp dir
 * (SPEC §16), once per runner, with both workspaces directly in the system temp dir: each way, a
 * write, a truncation and a new file are refused. Each session has a `TMPDIR` of its own; what a
 * program that writes `/tmp` directly gets differs by runner (bubblewrap: a private tmpfs per
 * command; Landlock: refused).
 */
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { SessionClose, SessionOpen } from '../../protocol/methods.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { ownedDir, startUnprivilegedDaemon, UNPRIVILEGED_UID } from '../helpers/unprivileged-daemon.js';
import { BACKENDS } from '../helpers/sandbox.js';

/** A fresh directory directly in the system temp dir, removed after the test. */
function tempWorkspace(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `execd-${name}-`));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A runner under test and how its daemon starts; `owned` when its workspaces must belong to uid 1000. */
interface SessionsVariant {
  name: string;
  backend: 'bwrap' | 'landlock';
  start: () => Promise<TestDaemon>;
  owned: boolean;
}

const VARIANTS: SessionsVariant[] = [
  ...BACKENDS.map((backend): SessionsVariant => ({
    name: backend.name,
    backend: backend.name,
    start: () => startDaemon({ config: { ...backend.config } }),
    owned: false,
  })),
  {
    name: 'landlock, unprivileged',
    backend: 'landlock',
    start: async () => (await startUnprivilegedDaemon()).daemon,
    owned: true,
  },
];

describe.each(VARIANTS)('sessions sealed from each other under $name', (variant) => {
  const backend = { name: variant.backend };
  it("two sessions with workspaces under /tmp: neither writes the other's workspace or temp dir", async () => {
    const daemon = await variant.start();
    const client = await daemon.connect();
    expect(client.info.capabilities.sandbox.backend).toBe(variant.backend);
    const workspace = (name: string) => (variant.owned ? ownedDir(tempWorkspace(name)) : tempWorkspace(name));
    const workspaces = { A: workspace('wsA'), B: workspace('wsB') };
    for (const [sessionId, cwd] of Object.entries(workspaces)) {
      await client.call(SessionOpen, { sessionId, cwd, sandbox: { mode: 'workspace-write' } });
      writeFileSync(join(cwd, 'kept.txt'), `${sessionId}\n`);
      if (variant.owned) chownSync(join(cwd, 'kept.txt'), UNPRIVILEGED_UID, UNPRIVILEGED_UID);
    }
    const run = (sessionId: string, command: string) => client.run({ sessionId, command });

    // Each session's TMPDIR is writable to it and kept between its commands (Landlock) or private to each command (bubblewrap).
    const temps: Record<string, string> = {};
    for (const sessionId of ['A', 'B']) {
      const made = await run(sessionId, 'echo "$TMPDIR"; echo mine > "$TMPDIR/t.txt" && cat "$TMPDIR/t.txt"');
      expect(made).toMatchObject({ exitCode: 0, sandbox: { denied: false } });
      const [temp, content] = made.stdout.text.trim().split('\n');
      expect(content).toBe('mine');
      temps[sessionId] = temp!;
    }
    console.log(`${variant.name} TMPDIR: A ${temps.A}, B ${temps.B}`);
    if (backend.name === 'landlock') {
      expect(temps.A).toBe(join(daemon.stateDir, 'tmp', 'A'));
      expect(temps.B).toBe(join(daemon.stateDir, 'tmp', 'B'));
      expect((await run('A', 'cat "$TMPDIR/t.txt"')).stdout.text).toBe('mine\n');
    } else expect(temps).toEqual({ A: '/tmp', B: '/tmp' });

    for (const [self, other] of [
      ['A', 'B'],
      ['B', 'A'],
    ] as const) {
      const theirs = workspaces[other];
      const attempts = [
        `echo forged > '${join(theirs, 'kept.txt')}'`,
        `: > '${join(theirs, 'kept.txt')}'`,
        `echo new > '${join(theirs, 'new.txt')}'`,
      ];
      // Under bubblewrap '/tmp' names each command's own tmpfs: another session's is out of sight.
      if (backend.name === 'landlock') attempts.push(`echo new > '${join(temps[other]!, 'new.txt')}'`);
      for (const command of attempts) {
        const result = await run(self, command);
        expect(result.exitCode, `${self}: ${command}`).not.toBe(0);
        // Landlock refuses (EACCES); bubblewrap's private /tmp has no such path at all (ENOENT).
        if (backend.name === 'landlock') expect(result.sandbox?.denied, `${self}: ${command}`).toBe(true);
        else expect(result.stderr.text, `${self}: ${command}`).toContain('No such file or directory');
      }
      expect(readFileSync(join(theirs, 'kept.txt'), 'utf8')).toBe(`${other}\n`);
      expect(existsSync(join(theirs, 'new.txt'))).toBe(false);
    }
    if (backend.name === 'landlock') {
      // The other session's temp file is still its own.
      expect(readFileSync(join(temps.A!, 't.txt'), 'utf8')).toBe('mine\n');
      expect(existsSync(join(temps.A!, 'new.txt'))).toBe(false);
    }

    // A program that writes /tmp directly: a private tmpfs of its own command (bubblewrap), refused (Landlock).
    const direct = `/tmp/execd-direct-${process.pid}-${Date.now()}`;
    onTestFinished(() => rmSync(direct, { force: true }));
    const written = await run('A', `echo d > ${direct} && cat ${direct}`);
    console.log(`${variant.name} write to /tmp directly: exit ${written.exitCode}, denied ${written.sandbox?.denied}`);
    if (backend.name === 'bwrap') expect(written).toMatchObject({ exitCode: 0, stdout: { text: 'd\n' } });
    else expect(written.sandbox?.denied).toBe(true);
    expect(existsSync(direct)).toBe(false);

    // A session's temp dir goes with it.
    await client.call(SessionClose, { sessionId: 'A' });
    expect(existsSync(join(daemon.stateDir, 'tmp', 'A'))).toBe(false);
  });
});
