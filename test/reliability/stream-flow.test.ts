/**
 * Issue 13, point 6: streaming has flow control. A client that reads as fast as it can gets every
 * byte of a command that writes faster (the daemon stops reading the command's pipe while the
 * client is behind); the CLI writes a big output to a file intact and never hangs when its
 * connection drops; a client that reads nothing is still dropped and the daemon is unharmed.
 */
import { createHash } from 'node:crypto';
import { createWriteStream, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { DaemonStatus, SessionOpen, ShellRun } from '../../protocol/methods.js';
import { CLI, startDaemon } from '../helpers/daemon.js';
import { rawAuthed } from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';

const LINES = 3_000_000;

/** Exactly what `seq 1 n` prints. */
function seqText(n: number): string {
  const parts: string[] = [];
  for (let i = 1; i <= n; i++) parts.push(`${i}\n`);
  return parts.join('');
}

/** Runs the CLI with stdout into `file`; resolves with its exit code and stderr. */
function cliToFile(args: string[], file: string): Promise<{ code: number | null; stderr: string; ms: number }> {
  const started = Date.now();
  const out = createWriteStream(file);
  return new Promise((resolve, reject) => {
    out.once('open', (fd) => {
      const proc = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', fd, 'pipe'] });
      let stderr = '';
      proc.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
      proc.once('error', reject);
      proc.once('close', (code) => {
        out.close();
        resolve({ code, stderr, ms: Date.now() - started });
      });
    });
  });
}

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

describe('streaming flow control', () => {
  it('the library streams every byte of `seq 1 3000000`, in order', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s');
    const chunks: string[] = [];
    let progressMessages = 0;
    const started = Date.now();
    const result = await client.run(
      { sessionId: 's', command: `seq 1 ${LINES}`, timeoutMs: 300_000 },
      {
        onOutput: ({ stream, text }) => {
          progressMessages += 1;
          if (stream === 'stdout') chunks.push(text);
        },
      },
    );
    const streamed = chunks.join('');
    const expected = seqText(LINES);
    expect(result.aborted).toBe(false);
    expect(result.exitCode).toBe(0);
    expect(streamed.length).toBe(expected.length);
    expect(streamed === expected).toBe(true);
    console.log(
      `streamed seq 1 ${LINES}: ${streamed.length} bytes in ${progressMessages} messages, all in order, ` +
        `${Date.now() - started} ms`,
    );
  });

  it('`execd run -- cat <big file> > f` writes an identical file', async () => {
    const daemon = await startDaemon();
    const big = join(daemon.dir, 'big.txt');
    // 24 MiB of text: more than maxUnsentBytes' default share of a slow client, less than maxSpillBytes.
    const line = 'abcdefghijklmnopqrstuvwxyz0123456789-'.repeat(3) + '\n';
    const text = line.repeat(Math.ceil((24 * 1024 * 1024) / line.length));
    await new Promise<void>((resolve, reject) =>
      createWriteStream(big).end(text, (error?: Error | null) => (error ? reject(error) : resolve())),
    );
    const out = join(daemon.dir, 'out.txt');
    const run = await cliToFile(
      ['run', '--socket', daemon.socketPath, '--state-dir', daemon.stateDir, '--', `cat ${big}`],
      out,
    );
    // Every byte streamed to the file: no truncation notice, nothing else on stderr.
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(statSync(out).size).toBe(statSync(big).size);
    expect(sha(readFileSync(out))).toBe(sha(text));
    console.log(`execd run -- cat (${statSync(big).size} bytes) > f: identical file, ${run.ms} ms`);
  });

  it('the CLI exits with an error when its connection drops mid-stream, never hangs', async () => {
    const daemon = await startDaemon();
    const out = join(daemon.dir, 'out.txt');
    const cli = cliToFile(
      ['run', '--socket', daemon.socketPath, '--state-dir', daemon.stateDir, '--', 'yes | head -c 200000000'],
      out,
    );
    await waitFor(() => statSync(out, { throwIfNoEntry: false })?.size, 'output to arrive');
    await daemon.crash();
    const ended = await cli;
    expect(ended.code).toBe(125);
    expect(ended.stderr).toContain('connection to the daemon was lost');
    console.log(`CLI after the daemon died mid-stream: exit ${ended.code} after ${ended.ms} ms in all`);
  });

  it('a client that reads nothing is dropped after unreadTimeoutMs; the daemon is unharmed', async () => {
    const daemon = await startDaemon({ config: { unreadTimeoutMs: 1_000 } });
    const other = await daemon.session('other');
    const silent = await rawAuthed(daemon.socketPath, daemon.stateDir);
    await silent.request(SessionOpen.method, { sessionId: 'silent', cwd: daemon.dir });
    silent.socket.pause();
    const started = Date.now();
    silent.send({
      jsonrpc: '2.0',
      id: 7,
      method: ShellRun.method,
      params: { sessionId: 'silent', command: 'yes', outputToken: 'x' },
    });
    await waitFor(() => /more than unreadTimeoutMs/.test(daemon.stderr()), 'the silent client to be dropped');
    const droppedAfter = Date.now() - started;
    await waitFor(async () => (await other.call(DaemonStatus, {})).processes === 0, 'its run to be killed');
    const result = await other.run({ sessionId: 'other', command: 'echo fine' });
    expect(result.stdout.text).toBe('fine\n');
    console.log(`a client reading nothing: dropped ${droppedAfter} ms after its run started (unreadTimeoutMs 1000)`);
  });
});
