/** Many background jobs at once across sessions, against a real daemon: nothing lost, nothing crossed. */
import { describe, expect, it } from 'vitest';
import { ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { readToEnd } from '../helpers/jobs.js';

const SESSIONS = 5;
const JOBS_PER_SESSION = 10;
const LINES = 400;

/** What job `tag` prints: numbered lines on stdout, a pause every 100, every 50th line also on stderr. */
function expectedOutput(tag: string): { stdout: string; stderr: string } {
  let stdout = '';
  let stderr = '';
  for (let i = 1; i <= LINES; i++) {
    stdout += `${tag} line ${i} of the concurrency test\n`;
    if (i % 50 === 0) stderr += `${tag} err ${i}\n`;
  }
  return { stdout, stderr };
}

function command(tag: string): string {
  return (
    `for i in $(seq 1 ${LINES}); do echo "${tag} line $i of the concurrency test"; ` +
    `if (( i % 50 == 0 )); then echo "${tag} err $i" >&2; fi; if (( i % 100 == 0 )); then sleep 0.01; fi; done`
  );
}

describe('background jobs under concurrency', () => {
  it(`runs ${SESSIONS * JOBS_PER_SESSION} jobs across ${SESSIONS} sessions, each read to the end complete and uncrossed`, async () => {
    const daemon = await startDaemon();
    let bytes = 0;
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, s) => {
        const sessionId = `session-${s}`;
        const client = await daemon.session(sessionId);
        const tags = Array.from({ length: JOBS_PER_SESSION }, (_, j) => `S${s}J${j}`);
        const jobs = await Promise.all(
          tags.map((tag) => client.call(ShellStart, { sessionId, command: command(tag) })),
        );
        const reads = await Promise.all(jobs.map(({ jobId }) => readToEnd(client, sessionId, jobId, 25)));
        reads.forEach((read, j) => {
          const tag = tags[j]!;
          const { stdout, stderr } = expectedOutput(tag);
          // Reads interleave the streams delta by delta; split them back apart by section.
          const out: string[] = [];
          const err: string[] = [];
          for (const line of read.text.split('\n')) {
            if (line === '' || line === '[stderr]') continue;
            (line.includes(' err ') ? err : out).push(`${line}\n`);
          }
          expect(out.join('')).toBe(stdout);
          expect(err.join('')).toBe(stderr);
          expect(read.lossy).toBe(false);
          expect(read.last.job).toMatchObject({
            status: 'completed',
            stdoutBytes: stdout.length,
            stderrBytes: stderr.length,
          });
          bytes += stdout.length + stderr.length;
        });
      }),
    );
    console.log(`${SESSIONS * JOBS_PER_SESSION} jobs, ${bytes} bytes read back exactly once each`);
    expect(bytes).toBeGreaterThan(SESSIONS * JOBS_PER_SESSION * LINES * 30);
  }, 180_000);
});
