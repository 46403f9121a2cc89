/**
 * The built `execd` CLI as a subprocess, against a temporary socket and state dir given through
 * EXECD_SOCKET / EXECD_STATE_DIR. When the test finishes — also when it fails — every CLI process
 * it spawned is killed, every daemon on its socket (found through /proc cmdlines) is stopped, and
 * the temp dir is removed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { removeLeftCgroups } from '../../daemon/processes/process-scopes.js';
import { CLI, waitPidsGone } from './daemon.js';

/** What a finished CLI process left. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A CLI process still running, with its output so far. */
export interface CliProcess {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when it exits. */
  done: Promise<CliResult>;
}

/** A temp endpoint and the means to run the CLI against it. */
export interface CliWorld {
  dir: string;
  socketPath: string;
  stateDir: string;
  /** The environment every CLI child gets. */
  env: NodeJS.ProcessEnv;
  /** Starts `execd ARGS...` without waiting. */
  spawn(args: string[], options?: { env?: Record<string, string>; cwd?: string }): CliProcess;
  /** Runs `execd ARGS...` to the end. */
  run(args: string[], options?: { env?: Record<string, string>; cwd?: string }): Promise<CliResult>;
  /** Pids of the daemons serving this world's socket (live processes whose cmdline names it). */
  daemonPids(): number[];
}

/** Pids of live, non-zombie processes whose command line contains every one of `needles`. */
export function pidsWithCmdline(...needles: string[]): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    let cmdline: string;
    let stat: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') continue;
    const args = cmdline.split('\0');
    if (needles.every((needle) => args.includes(needle))) pids.push(pid);
  }
  return pids;
}

/** Creates a world for the current test. */
export function cliWorld(options: { env?: Record<string, string> } = {}): CliWorld {
  const dir = mkdtempSync(join(tmpdir(), 'execd-cli-'));
  const socketPath = join(dir, 'run', 'execd.sock');
  const stateDir = join(dir, 'state');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    EXECD_SOCKET: socketPath,
    EXECD_STATE_DIR: stateDir,
    ...options.env,
  };
  delete env.EXECD_TOKEN;
  const children = new Set<ChildProcess>();

  const world: CliWorld = {
    dir,
    socketPath,
    stateDir,
    env,
    spawn(args, spawnOptions = {}) {
      const proc = spawn(process.execPath, [CLI, ...args], {
        env: { ...env, ...spawnOptions.env },
        cwd: spawnOptions.cwd ?? dir,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(proc);
      let stdout = '';
      let stderr = '';
      proc.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
      proc.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
      const done = new Promise<CliResult>((resolve) =>
        proc.once('close', (code, signal) => {
          children.delete(proc);
          resolve({ code, signal, stdout, stderr });
        }),
      );
      return { proc, stdout: () => stdout, stderr: () => stderr, done };
    },
    run(args, runOptions) {
      return world.spawn(args, runOptions).done;
    },
    // A daemon names the socket on its command line (`serve --socket <path>`); clients do not.
    daemonPids: () => pidsWithCmdline('serve', socketPath),
  };

  onTestFinished(async () => {
    for (const child of children) child.kill('SIGKILL');
    const daemons = world.daemonPids();
    for (const pid of daemons) process.kill(pid, 'SIGTERM');
    for (const pid of await waitPidsGone(daemons, 15_000)) process.kill(pid, 'SIGKILL');
    await waitPidsGone(daemons, 5_000);
    removeLeftCgroups(stateDir); // a daemon a test killed with -9 leaves its cgroups
    rmSync(dir, { recursive: true, force: true });
  });
  return world;
}
