// The client of netns-reconnect.test.ts: run with `ip netns exec` in the hub namespace, it
// connects over TLS with `reconnect: true`, runs one command whose link the test cuts meanwhile,
// and prints one JSON line: the run's result, how long it took, and how often it reconnected.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { connect } from '../../dist/client/connect.js';
import { SessionOpen } from '../../dist/protocol/methods.js';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const client = await connect(config.url, {
  ca: readFileSync(config.ca),
  token: config.token,
  keepAliveMs: config.keepAliveMs,
  reconnect: true,
  clientName: 'netns-reconnect',
});
const reconnects = [];
const started = performance.now();
client.onReconnected(() => reconnects.push(Math.round(performance.now() - started)));
try {
  await client.call(SessionOpen, { sessionId: 's', cwd: config.cwd });
  const result = await client.run({ sessionId: 's', command: config.command, timeoutMs: 60_000 });
  process.stdout.write(`${JSON.stringify({ result, ms: Math.round(performance.now() - started), reconnects })}\n`);
} catch (error) {
  process.stdout.write(`${JSON.stringify({ error: String(error), reconnects })}\n`);
} finally {
  client.close();
}
