/**
 * B10: what the daemon costs a sandbox just by being there: the PSS (proportional set size, so
 * the Node binary shared between processes is counted once) of the daemon and every helper process
 * it keeps, idle after start and idle after a warm-up, against a bare idle Node process started in
 * the same run. A bare node's PSS falls as more Node processes share the binary's pages (9.1 to
 * 14.1 MB within one day on one machine), so the baseline runs beside the daemon and both are read
 * at the same moment: whatever else shares those pages divides both alike. USS (private pages
 * only, which no sharing moves) is printed beside each ratio.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  JobRelease,
  JobWait,
  SessionClose,
  ShellRun,
  ShellStart,
  TerminalClose,
  TerminalOpen,
  TerminalRun,
} from '../protocol/methods.js';
import { onCleanup } from './cleanup.js';
import { exited, startBenchDaemon, type BenchDaemon } from './daemon.js';
import { SPILL_CONFIG } from './b2-spill.js';
import type { Figure } from './stats.js';

/** Time for a process's start-up work (and the daemon's after-listen loading) to settle. */
const SETTLE_MS = 3_000;
const WARMUP = { runs: 200, jobs: 20, terminals: 2 };

/** A field of `/proc/<pid>/smaps_rollup`, in bytes; 0 for a process that is gone. */
function rollupField(pid: number, field: string): number {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/** `Pss` of `/proc/<pid>/smaps_rollup`, in bytes; 0 for a process that is gone. */
export function readPss(pid: number): number {
  return rollupField(pid, 'Pss');
}

/** USS: the process's private pages (clean and dirty), which sharing with others cannot move. */
function readUss(pid: number): number {
  return rollupField(pid, 'Private_Clean') + rollupField(pid, 'Private_Dirty');
}

/** Every live descendant of `pid` (its helpers, once no command runs), from `/proc/<pid>/stat`. */
export function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of parents) {
      if (ppid !== parent) continue;
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}

/** The PSS and USS of a process and its descendants, and how many helpers that is. */
function footprint(pid: number): { pss: number; uss: number; helpers: number } {
  const helpers = descendants(pid);
  const all = [pid, ...helpers];
  return {
    pss: all.reduce((sum, p) => sum + readPss(p), 0),
    uss: all.reduce((sum, p) => sum + readUss(p), 0),
    helpers: helpers.length,
  };
}

/** A bare `node -e 'setInterval(…)'`, idle, kept beside the daemon until `stop`. */
function startBareNode(): { pid: number; stop: () => Promise<void> } {
  const proc = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  const forget = onCleanup(() => proc.kill('SIGKILL'));
  return {
    pid: proc.pid!,
    stop: async () => {
      proc.kill('SIGKILL');
      await exited(proc);
      forget();
    },
  };
}

/** 200 runs, 20 jobs and 2 terminals, every one of them ended and released. */
async function warmUp(daemon: BenchDaemon): Promise<void> {
  const sessionId = 'bench-b10';
  const client = await daemon.session(sessionId);
  try {
    for (let i = 0; i < WARMUP.runs; i++) await client.call(ShellRun, { sessionId, command: 'true' });
    const jobs = await Promise.all(
      Array.from({ length: WARMUP.jobs }, () => client.call(ShellStart, { sessionId, command: 'echo job' })),
    );
    for (const { jobId } of jobs) {
      await client.call(JobWait, { sessionId, jobId });
      await client.call(JobRelease, { sessionId, jobId });
    }
    for (let i = 0; i < WARMUP.terminals; i++) {
      const { terminal } = await client.call(TerminalOpen, { sessionId });
      await client.call(TerminalRun, { sessionId, terminalId: terminal.id, command: 'echo terminal' });
      await client.call(TerminalClose, { sessionId, terminalId: terminal.id });
    }
  } finally {
    await client.call(SessionClose, { sessionId });
    client.close();
  }
}

/** Measures B10 on a daemon of its own (the shared one has done other work already). */
export async function benchFootprint(): Promise<Figure[]> {
  const bareNode = startBareNode();
  const daemon = await startBenchDaemon(SPILL_CONFIG);
  try {
    await sleep(SETTLE_MS);
    const idle = footprint(daemon.pid);
    const bareIdle = footprint(bareNode.pid);
    await warmUp(daemon);
    await sleep(SETTLE_MS);
    const warm = footprint(daemon.pid);
    const bareWarm = footprint(bareNode.pid);
    const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
    const of = (f: { pss: number; uss: number; helpers: number }, bare: { pss: number; uss: number }) =>
      `daemon + ${f.helpers} helper${f.helpers === 1 ? '' : 's'} ${mb(f.pss)}, bare node ${mb(bare.pss)} ` +
      `read at the same moment; USS ${mb(f.uss)} vs ${mb(bare.uss)} (${(f.uss / bare.uss).toFixed(2)}×)`;
    return [
      {
        label: 'B10 PSS idle after start vs bare node',
        value: idle.pss / bareIdle.pss,
        target: 2.5,
        comparison: 'at-most',
        note: of(idle, bareIdle),
      },
      {
        label: 'B10 PSS idle after warm-up vs bare node',
        value: warm.pss / bareWarm.pss,
        target: 3.5,
        comparison: 'at-most',
        note: `${of(warm, bareWarm)}; warm-up ${WARMUP.runs} runs, ${WARMUP.jobs} jobs, ${WARMUP.terminals} terminals`,
      },
    ];
  } finally {
    await daemon.stop();
    await bareNode.stop();
  }
}
