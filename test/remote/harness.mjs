// The harness of the cross-namespace test (netns.test.ts): run with `ip netns exec` in its own
// namespace, it drives two daemons at once over TLS and reports each step as one JSON line on
// stdout. Its configuration is the JSON file named by argv[2]; it reads `vanished` on stdin once
// the test has made daemon A's host vanish.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout } from 'node:timers';
import { createInterface } from 'node:readline';
import { connect } from '../../dist/client/connect.js';
import { JobRead, SessionOpen, ShellRun, ShellStart } from '../../dist/protocol/methods.js';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const pem = (path) => readFileSync(path);
const report = (step, facts = {}) => process.stdout.write(`${JSON.stringify({ step, ...facts })}\n`);
const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once('line', resolve));

function options(daemon, overrides = {}) {
  return {
    ca: pem(config.serverCa),
    cert: pem(config.client.cert),
    key: pem(config.client.key),
    token: daemon.token,
    keepAliveMs: config.keepAliveMs,
    clientName: 'netns-harness',
    ...overrides,
  };
}

/** Reads a job's output to its end. */
async function readToEnd(client, sessionId, jobId) {
  let text = '';
  for (;;) {
    const result = await client.call(JobRead, { sessionId, jobId });
    text += result.delta;
    if (result.job.status !== 'running' && result.delta === '') return text;
    if (result.delta === '') await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** One daemon's share of the concurrent part: a session, a foreground run, a job read to its end. */
async function drive(name, daemon) {
  const client = await connect(daemon.url, options(daemon));
  const sessionId = `harness-${name}`;
  await client.call(SessionOpen, { sessionId, cwd: daemon.cwd });
  const run = await client.call(ShellRun, { sessionId, command: `echo "fg-${name} $(hostname -I)"` });
  const { jobId } = await client.call(ShellStart, {
    sessionId,
    command: `for i in $(seq 1 ${config.jobLines}); do echo "${name}-$i"; done`,
  });
  const job = await readToEnd(client, sessionId, jobId);
  return { client, sessionId, run: run.stdout.text, job };
}

async function refusal(daemon, overrides) {
  try {
    const client = await connect(daemon.url, options(daemon, overrides));
    client.close();
    return { refused: false };
  } catch (error) {
    return { refused: true, name: error.name, message: error.message };
  }
}

const [a, b] = await Promise.all([drive('A', config.daemons.A), drive('B', config.daemons.B)]);
report('driven', {
  A: { run: a.run, job: a.job },
  B: { run: b.run, job: b.job },
});

report('refusals', {
  wrongCa: await refusal(config.daemons.A, { ca: pem(config.rogueCa) }),
  wrongClientCert: await refusal(config.daemons.A, {
    cert: pem(config.rogueClient.cert),
    key: pem(config.rogueClient.key),
  }),
  noClientCert: await refusal(config.daemons.B, { cert: undefined, key: undefined }),
  wrongToken: await refusal(config.daemons.B, { token: 'f'.repeat(64) }),
});

// A call that only a vanished host would leave pending: daemon A's host goes while it waits.
const pending = a.client.call(ShellRun, { sessionId: a.sessionId, command: 'sleep 120' }).then(
  () => ({ failed: false }),
  (error) => ({ failed: true, name: error.name, message: error.message, at: performance.now() }),
);
report('pending');
await nextLine();
const vanishedAt = performance.now();
const outcome = await pending;
const stillB = await b.client.call(ShellRun, { sessionId: b.sessionId, command: 'echo B-still-here' });
report('vanished', {
  ...outcome,
  afterMs: outcome.failed ? Math.round(outcome.at - vanishedAt) : undefined,
  stillB: stillB.stdout.text,
});
b.client.close();
a.client.close();
lines.close();
