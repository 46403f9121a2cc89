/**
 * B12 (SPEC §16): what a confined command costs where execd is meant to run, driven as a platform
 * drives it. Per backend (bubblewrap, Landlock), one daemon with a TLS listener on loopback and one
 * client with two sessions: `workspace-write` and `danger-full-access`. 200 sequential `shell/run`
 * of `true` per side, all four sides interleaved; p50/p99 per side, the overhead of confinement
 * (confined p50 − unconfined p50 of the same daemon), the CPU per run of the daemon and its helpers
 * (with the commands they reaped: bwrap, the shell), and the PSS of the Landlock confined spawner.
 * Targets: the Landlock overhead ≤ 15 ms and ≤ 1.5× bubblewrap's.
 *
 * `npm run bench -- B12` measures it alone.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '../client/connect.js';
import type { ExecdClient } from '../client/connection.js';
import { SessionOpen } from '../protocol/methods.js';
import { makeCertificates } from './b1-tls.js';
import { startTlsBenchDaemon, type BenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { median, percentile, type Figure } from './stats.js';

const RUNS = 200;
const WARMUP = 10;
/** Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ). */
const TICKS_PER_SECOND = 100;

type Backend = 'bwrap' | 'landlock';

/** One backend's daemon, reached over TLS, with a confined and an unconfined session. */
interface Subject {
  backend: Backend;
  daemon: BenchDaemon;
  client: ExecdClient;
}

/** CPU of a process and of the children it reaped (user + system), in ms; 0 when it is gone. */
function cpuWithChildrenMs(pid: number): number {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index]), 0);
    return (ticks * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** The daemon's helper processes: its spawner process and its confined spawners. */
function helpers(daemonPid: number, kind: RegExp = /spawn-worker\.js|confined-worker\.js/): number[] {
  let children: number[];
  try {
    children = readFileSync(`/proc/${daemonPid}/task/${daemonPid}/children`, 'utf8').trim().split(' ').map(Number);
  } catch {
    return [];
  }
  return children.filter((pid) => {
    try {
      return kind.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
    } catch {
      return false;
    }
  });
}

/** CPU of the daemon and its helpers so far, their reaped commands included. */
function treeCpuMs(daemonPid: number, helperPids: number[]): number {
  return [daemonPid, ...helperPids].reduce((sum, pid) => sum + cpuWithChildrenMs(pid), 0);
}

/** `Pss` of a process from its smaps_rollup, in bytes (the bench runs as a user that may read it). */
function pssBytes(pid: number): number {
  try {
    const kib = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1];
    return kib === undefined ? Number.NaN : Number(kib) * 1024;
  } catch {
    return Number.NaN;
  }
}

async function subject(backend: Backend, pki: ReturnType<typeof makeCertificates>): Promise<Subject> {
  const { daemon, url } = await startTlsBenchDaemon({ sandboxBackend: backend }, pki);
  const token = readFileSync(join(daemon.stateDir, 'token'), 'utf8').trim();
  const client = await connect(url, { ca: readFileSync(pki.ca), token, clientName: 'execd-bench' });
  if (client.info.capabilities.sandbox.backend !== backend) {
    client.close();
    await daemon.stop();
    throw new Error(`B12: ${backend} does not work here (${client.info.capabilities.sandbox.unavailable})`);
  }
  const workspace = join(daemon.dir, 'ws');
  mkdirSync(workspace);
  await client.call(SessionOpen, { sessionId: 'confined', cwd: workspace, sandbox: { mode: 'workspace-write' } });
  await client.call(SessionOpen, { sessionId: 'free', cwd: workspace, sandbox: { mode: 'danger-full-access' } });
  return { backend, daemon, client };
}

/** Per side: run durations and the CPU of the daemon and its helpers per run. */
interface SideResult {
  times: number[];
  cpuMs: number[];
}

/** Measures B12 on one daemon per backend, each over TLS. */
export async function benchConfinedTls(shared: BenchDaemon): Promise<Figure[]> {
  const pki = makeCertificates(shared.dir);
  const subjects: Subject[] = [];
  try {
    for (const backend of ['bwrap', 'landlock'] as const) subjects.push(await subject(backend, pki));
    const results = new Map<string, SideResult>();
    const sides = subjects.flatMap(({ backend, daemon, client }) =>
      (['confined', 'free'] as const).map((sessionId) => {
        const name = `${backend} ${sessionId}`;
        const result: SideResult = { times: [], cpuMs: [] };
        results.set(name, result);
        return {
          name,
          once: async (round: number) => {
            const before = treeCpuMs(daemon.pid, helpers(daemon.pid));
            const start = performance.now();
            const run = await client.run({ sessionId, command: 'true' });
            const took = performance.now() - start;
            if (run.exitCode !== 0) throw new Error(`B12: true exited ${run.exitCode} under ${name}`);
            if (round >= 0) result.cpuMs.push(treeCpuMs(daemon.pid, helpers(daemon.pid)) - before);
            return took;
          },
        };
      }),
    );
    const times = await interleave(sides, RUNS, WARMUP);
    for (const [name, values] of times) results.get(name)!.times = values;

    const landlock = subjects.find((s) => s.backend === 'landlock')!;
    const confinedSpawners = helpers(landlock.daemon.pid, /confined-worker\.js/);
    const pss = confinedSpawners.reduce((sum, pid) => sum + pssBytes(pid), 0);

    const ms = (values: number[], p: number) => `${percentile(values, p).toFixed(1)} ms`;
    const cpu = (values: number[]) => `${(values.reduce((a, b) => a + b, 0) / values.length).toFixed(1)} ms`;
    const overhead = (backend: Backend) =>
      median(results.get(`${backend} confined`)!.times) - median(results.get(`${backend} free`)!.times);
    const describe = (backend: Backend) => {
      const confined = results.get(`${backend} confined`)!;
      const free = results.get(`${backend} free`)!;
      return (
        `confined ${ms(confined.times, 50)} (p99 ${ms(confined.times, 99)}), ` +
        `unconfined ${ms(free.times, 50)} (p99 ${ms(free.times, 99)}); ` +
        `CPU per run ${cpu(confined.cpuMs)} confined, ${cpu(free.cpuMs)} unconfined`
      );
    };
    const bwrapOverhead = overhead('bwrap');
    const landlockOverhead = overhead('landlock');
    return [
      {
        label: 'B12 confined run over TLS, bwrap overhead p50',
        value: bwrapOverhead,
        unit: ' ms',
        digits: 1,
        note: describe('bwrap'),
      },
      {
        label: 'B12 confined run over TLS, landlock overhead p50',
        value: landlockOverhead,
        target: 15,
        comparison: 'at-most',
        unit: ' ms',
        digits: 1,
        note: `${describe('landlock')}; ${RUNS} runs per side, interleaved`,
      },
      {
        label: 'B12 landlock overhead vs bwrap overhead',
        // Both near zero would make any ratio noise: at most 1 ms counts as 1 ms.
        value: Math.max(landlockOverhead, 1) / Math.max(bwrapOverhead, 1),
        target: 1.5,
        comparison: 'at-most',
      },
      {
        label: 'B12 landlock confined spawner PSS',
        value: pss / 2 ** 20,
        unit: ' MB',
        digits: 1,
        note: `${confinedSpawners.length} confined spawner process(es) after the runs`,
      },
    ];
  } finally {
    for (const { client, daemon } of subjects) {
      client.close();
      await daemon.stop();
    }
  }
}
