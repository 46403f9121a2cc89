/**
 * The baselines of B6 (SPEC §8): the same `bash -i` driven without execd — by Python's pexpect in
 * its own process (tuned and with its default 50 ms `delaybeforesend`), and by tmux `send-keys` +
 * `wait-for`. Each is started once and then asked for one timed round at a time, so the bench can
 * interleave them with the daemon's runs.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { onCleanup } from './cleanup.js';

/** The system Python, which has pexpect (Debian `python3-pexpect`); a pyenv `python3` may not. */
export const SYSTEM_PYTHON = process.env.BENCH_PYTHON ?? '/usr/bin/python3';

/**
 * The pexpect driver: spawns `bash --noprofile --norc -i` with a fixed prompt; for each line on
 * stdin (`tuned` or `default`), does one `sendline('true')` + `expect` of the prompt and prints the
 * time it took in milliseconds, measured inside Python.
 */
const PEXPECT_DRIVER = `
import sys, time, pexpect
PROMPT = 'PXB>'
child = pexpect.spawn('bash', ['--noprofile', '--norc', '-i'], encoding='utf-8', echo=False,
                      env={'PATH': '/usr/bin:/bin', 'TERM': 'dumb', 'PS1': PROMPT, 'HOME': '/tmp'})
child.expect_exact(PROMPT)
child.delaybeforesend = None
child.sendline("PS1='" + PROMPT + "'; PROMPT_COMMAND=")
child.expect_exact(PROMPT)
sys.stdout.write('ready\\n'); sys.stdout.flush()
for line in sys.stdin:
    child.delaybeforesend = None if line.strip() == 'tuned' else 0.05
    start = time.perf_counter()
    child.sendline('true')
    child.expect_exact(PROMPT)
    sys.stdout.write('%.6f\\n' % ((time.perf_counter() - start) * 1000)); sys.stdout.flush()
child.close(force=True)
`;

/** A baseline that answers one timed round at a time. */
export interface TerminalBaseline {
  /** One round; resolves with the milliseconds it took as the baseline measured it. */
  round(kind?: string): Promise<number>;
  stop(): void;
}

/** Starts the pexpect driver; rejects when Python or pexpect is missing. */
export async function startPexpect(): Promise<TerminalBaseline> {
  const child: ChildProcessWithoutNullStreams = spawn(SYSTEM_PYTHON, ['-c', PEXPECT_DRIVER]);
  const forget = onCleanup(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-2000)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const line = await lines.next();
    if (line.done) throw new Error(`B6: the pexpect driver ended: ${stderr.trim().slice(-300)}`);
    return line.value;
  };
  if ((await next()) !== 'ready') throw new Error('B6: the pexpect driver did not start');
  return {
    async round(kind = 'tuned') {
      child.stdin.write(`${kind}\n`);
      return Number(await next());
    },
    stop() {
      child.stdin.end();
      child.kill('SIGKILL');
      forget();
    },
  };
}

/** Runs a tmux client command on the bench's own server (its socket `socket`); resolves when it exits 0. */
function tmux(socket: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('tmux', ['-S', socket, ...args], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`tmux ${args[0]} exited ${code}`))));
  });
}

/** Starts a tmux server with one `bash -i`; each round is `send-keys 'true; tmux wait-for -S'` + `wait-for`. */
export async function startTmux(): Promise<TerminalBaseline> {
  // The server's socket lives in a temp dir of its own, removed with it.
  const dir = mkdtempSync(join(tmpdir(), 'execd-bench-tmux-'));
  const socket = join(dir, 'tmux.sock');
  const kill = () => {
    spawnSync('tmux', ['-S', socket, 'kill-server'], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  };
  const forget = onCleanup(kill);
  await tmux(socket, ['new-session', '-d', '-s', 'b6', '-x', '80', '-y', '24', 'bash --noprofile --norc -i']);
  let n = 0;
  return {
    async round() {
      const channel = `b6-${++n}`;
      const start = performance.now();
      const waited = tmux(socket, ['wait-for', channel]);
      await tmux(socket, ['send-keys', '-t', 'b6', `true; tmux -S ${socket} wait-for -S ${channel}`, 'Enter']);
      await waited;
      return performance.now() - start;
    },
    stop() {
      kill();
      forget();
    },
  };
}
