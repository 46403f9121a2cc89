/**
 * B4: 100 background jobs, each printing a timestamped line every 10 ms for 5 s, read with
 * `job/read` every 50 ms; every byte must arrive once, and lines must arrive soon after written.
 */
import type { ExecdClient } from '../client/connection.js';
import { JobRead, JobRelease, ShellStart } from '../protocol/methods.js';
import type { BenchDaemon } from './daemon.js';
import { percentile, type Figure } from './stats.js';

const JOBS = 100;
const LINES = 500;
/** Sessions the jobs are spread over (each under `maxJobsPerSession`). */
const SESSIONS = 4;
const READ_EVERY_MS = 50;
/** Give up on a job that has not finished by then. */
const DEADLINE_MS = 60_000;

/**
 * Prints `<epoch seconds.microseconds> <n>` every 10 ms; bash's own `read -t` on a pipe that never
 * delivers is the delay, so no process is forked per line.
 */
const JOB_COMMAND = `exec {fd}<> <(:); for ((i=1;i<=${LINES};i++)); do echo "$EPOCHREALTIME $i"; read -t 0.01 -u $fd; done`;

/** What the reader has seen of one job. */
interface JobTrack {
  client: ExecdClient;
  sessionId: string;
  jobId: string;
  /** The incomplete last line of the text read so far. */
  partial: string;
  nextLine: number;
  bytes: number;
  faults: number;
  done: boolean;
}

/** Checks the new complete lines of a job and records each line's write→read delay. */
function consume(track: JobTrack, delta: string, readAt: number, delays: number[]): void {
  track.bytes += Buffer.byteLength(delta);
  const lines = (track.partial + delta).split('\n');
  track.partial = lines.pop()!;
  for (const line of lines) {
    const [stamp, n] = line.split(' ');
    if (Number(n) !== track.nextLine) track.faults++;
    track.nextLine = Number(n) + 1;
    delays.push(readAt - Number(stamp) * 1000);
  }
}

/** One consuming read of a job; marks it done once it settled and nothing is left. */
async function readOnce(track: JobTrack, delays: number[]): Promise<void> {
  const result = await track.client.call(JobRead, { sessionId: track.sessionId, jobId: track.jobId });
  const readAt = performance.timeOrigin + performance.now();
  if (result.lossy) track.faults++;
  consume(track, result.delta, readAt, delays);
  if (result.job.status !== 'running' && result.delta === '') {
    track.done = true;
    if (result.job.stdoutBytes !== track.bytes) track.faults++;
  }
}

/** Measures B4; figures are n/a when this daemon has no background jobs. */
export async function benchJobs(daemon: BenchDaemon): Promise<Figure[]> {
  const clients = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => daemon.session(`bench-b4-${i}`)));
  const tracks: JobTrack[] = [];
  const delays: number[] = [];
  // Jobs start all at once and reading begins at once: a line waits only for the next read.
  let startFailure: string | undefined;
  const starting = Promise.all(
    Array.from({ length: JOBS }, async (_, i) => {
      const sessionId = `bench-b4-${i % SESSIONS}`;
      const client = clients[i % SESSIONS]!;
      try {
        const { jobId } = await client.call(ShellStart, { sessionId, command: JOB_COMMAND });
        tracks.push({ client, sessionId, jobId, partial: '', nextLine: 1, bytes: 0, faults: 0, done: false });
      } catch (error) {
        startFailure = `shell/start failed: ${(error as Error).message}`;
      }
    }),
  );
  const started = { all: false };
  // Each start catches its own failure, and `starting` is awaited below.
  starting.then(() => (started.all = true)).catch(() => {});
  const until = Date.now() + DEADLINE_MS;
  while ((!started.all || tracks.some((track) => !track.done)) && Date.now() < until && !startFailure) {
    const tick = performance.now();
    await Promise.all(tracks.filter((track) => !track.done).map((track) => readOnce(track, delays)));
    const rest = READ_EVERY_MS - (performance.now() - tick);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  }
  await starting;
  if (startFailure) {
    return [
      {
        label: 'B4 bytes lost or duplicated',
        value: Number.NaN,
        target: 0,
        comparison: 'at-most',
        digits: 0,
        note: startFailure,
      },
      {
        label: 'B4 p50 delay write→read',
        value: Number.NaN,
        target: 60,
        comparison: 'at-most',
        digits: 1,
        unit: ' ms',
      },
    ];
  }
  for (const track of tracks) await track.client.call(JobRelease, { sessionId: track.sessionId, jobId: track.jobId });
  const faults = tracks.reduce(
    (sum, track) =>
      sum + track.faults + (track.done ? 0 : 1) + (track.nextLine === LINES + 1 && track.partial === '' ? 0 : 1),
    0,
  );
  return [
    {
      label: 'B4 bytes lost or duplicated',
      value: faults,
      target: 0,
      comparison: 'at-most',
      digits: 0,
      note: `${JOBS} jobs × ${LINES} lines, ${delays.length} lines read; counts faulty reads and jobs`,
    },
    {
      label: 'B4 p50 delay write→read',
      value: percentile(delays, 50),
      target: 60,
      comparison: 'at-most',
      digits: 1,
      unit: ' ms',
      note: `p99 ${percentile(delays, 99).toFixed(1)} ms; read every ${READ_EVERY_MS} ms`,
    },
  ];
}
