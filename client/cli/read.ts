/**
 * `execd read JOB [--follow] [--merged]`: the job's new output (a consuming read), or all of it as
 * it comes. stdout goes to stdout and stderr to stderr; `--merged` prints the model's view instead.
 */
import { JobPeek, JobRead, MAX_PAGE_BYTES, MAX_READ_WAIT_MS } from '../../protocol/methods.js';
import type { JobPeekResult, JobReadResult, JobSnapshot } from '../../protocol/types.js';
import type { ExecdClient } from '../connection.js';
import { lossyLine } from '../../shared/render.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { jobExitCode } from './exit-codes.js';
import { jobMarker } from './job-format.js';
import { inSession, jobIdArgument, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd read`. */
export const READ_HELP = commandHelp({
  usage: 'read JOB [--follow] [--merged] [--session ID] [--json]',
  about: `Prints what JOB wrote since the last read: its stdout to stdout, its stderr to stderr. Reads
consume, so two reads never print the same bytes. Once JOB has ended, a read prints its exit marker
(or why it failed) to stderr and exits with its exit code (128+n after signal n, 125 when it failed
to start). With --follow, keeps printing until the job ends (read from its log files page by page,
so no byte is lost however fast it writes), then ends the same way. --merged prints the model's
view instead: stdout, then [stderr] and stderr, all on stdout (with --follow, consuming reads that
may drop what memory no longer holds, exactly as the model would see).`,
  options: [
    SESSION_HELP,
    '  --follow           print the output until the job ends',
    "  --merged           the model's view: stdout, then [stderr] and stderr, on stdout",
    '  --json             print each read (or, with --follow, each page) as one JSON line',
  ],
  examples: ['execd read bash-1', 'execd read --follow bash-1', 'execd read --merged bash-1'],
});

function settled(job: JobSnapshot): boolean {
  return job.status !== 'running' && job.status !== 'stopping';
}

/** Prints a consuming read: split by stream, or the model's merged delta. */
function printRead(result: JobReadResult, json: boolean, merged: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  if (merged) {
    process.stdout.write(result.delta);
  } else {
    process.stdout.write(result.stdout.text);
    process.stderr.write(result.stderr.text);
  }
  if (result.lossy) process.stderr.write(`${lossyLine(result)}\n`);
}

/** The model's view until the job ends: consuming reads that wait for new output. */
async function followMerged(client: ExecdClient, sessionId: string, jobId: string, json: boolean) {
  for (;;) {
    const result = await client.call(JobRead, { sessionId, jobId, waitMs: MAX_READ_WAIT_MS });
    printRead(result, json, true);
    if (settled(result.job)) return result.job;
  }
}

/**
 * Every byte from where the consuming reader stood until the job has settled and all it wrote was
 * printed: pages of the log files by offset (`job/peek`, which never drops what the files hold),
 * and, once caught up, a consuming read that waits for more, so the cursor follows along.
 */
async function followAll(client: ExecdClient, sessionId: string, jobId: string, json: boolean) {
  // Consume once to learn where the reader stood; everything from there is then paged from the logs.
  const first = await client.call(JobRead, { sessionId, jobId });
  const next = { stdout: first.stdout.from, stderr: first.stderr.from };
  let warned = false;
  for (;;) {
    const page: JobPeekResult = await client.call(JobPeek, {
      sessionId,
      jobId,
      stdoutOffset: next.stdout,
      stderrOffset: next.stderr,
      maxBytes: MAX_PAGE_BYTES,
    });
    if (json) process.stdout.write(`${JSON.stringify(page)}\n`);
    else {
      process.stdout.write(page.stdout.text);
      process.stderr.write(page.stderr.text);
    }
    if ((page.stdout.lossy || page.stderr.lossy) && !warned && !json) {
      warned = true;
      process.stderr.write('[some output passed maxSpillBytes and is lost: its log file was deleted]\n');
    }
    const moved = page.stdout.nextOffset !== next.stdout || page.stderr.nextOffset !== next.stderr;
    next.stdout = page.stdout.nextOffset;
    next.stderr = page.stderr.nextOffset;
    const caughtUp = next.stdout >= page.job.stdoutBytes && next.stderr >= page.job.stderrBytes;
    if (settled(page.job) && (caughtUp || !moved)) {
      // Everything was printed: the consuming reader moves to the end too.
      await client.call(JobRead, { sessionId, jobId });
      return page.job;
    }
    if (!caughtUp && moved) continue;
    await client.call(JobRead, { sessionId, jobId, waitMs: MAX_READ_WAIT_MS });
  }
}

/** Runs `execd read`. */
export const readCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('read', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      follow: { type: 'boolean', default: false },
      merged: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const jobId = jobIdArgument('read', positionals);
  const sessionId = values.session;
  const json = values.json;
  return inSession(
    endpointOf(values, globals),
    sessionId,
    async (client) => {
      let job: JobSnapshot;
      if (!values.follow) {
        const result = await client.call(JobRead, { sessionId, jobId });
        printRead(result, json, values.merged);
        // A read of a running job succeeded; one of a settled job ends as --follow would.
        if (!settled(result.job)) return 0;
        job = result.job;
      } else {
        job = values.merged
          ? await followMerged(client, sessionId, jobId, json)
          : await followAll(client, sessionId, jobId, json);
      }
      const marker = jobMarker(job);
      if (marker && !json) process.stderr.write(`${marker}\n`);
      return jobExitCode(job);
    },
    { command: 'read' },
  );
};
