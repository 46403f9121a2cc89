/**
 * B1 over TLS (SPEC §12): sequential `shell/run` of `true` over a TLS connection on loopback vs
 * over the Unix socket, to the same daemon, interleaved in the same run. A figure, no target.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '../client/connect.js';
import { SessionOpen } from '../protocol/methods.js';
import { startTlsBenchDaemon, type BenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { median, percentile, type Figure } from './stats.js';

const RUNS = 300;
const WARMUP = 20;

/** A throwaway CA and a server certificate for 127.0.0.1, made with openssl in `dir`. */
export function makeCertificates(dir: string): { ca: string; cert: string; key: string } {
  const file = (name: string) => join(dir, name);
  const run = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
    '-days',
    '1',
    '-subj',
    '/CN=bench-ca',
  ]);
  run(['req', ...ec, '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', '/CN=bench']);
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  run(
    ['x509', '-req', '-in', file('server.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key')].concat([
      '-CAcreateserial',
      '-out',
      file('server.crt'),
      '-days',
      '1',
      '-extfile',
      file('server.ext'),
    ]),
  );
  return { ca: file('ca.crt'), cert: file('server.crt'), key: file('server.key') };
}

/** Measures B1 over TLS against the Unix socket; starts its own daemon with a TLS listener. */
export async function benchLatencyTls(shared: BenchDaemon): Promise<Figure[]> {
  const pki = makeCertificates(shared.dir);
  const { daemon, url } = await startTlsBenchDaemon({}, pki);
  try {
    const local = await daemon.session('bench-b1-unix');
    const token = readFileSync(join(daemon.stateDir, 'token'), 'utf8').trim();
    const remote = await connect(url, { ca: readFileSync(pki.ca), token, clientName: 'execd-bench' });
    await remote.call(SessionOpen, { sessionId: 'bench-b1-tls', cwd: daemon.dir });
    const side = (name: string, client: typeof remote, sessionId: string) => ({
      name,
      once: async () => {
        const result = await client.run({ sessionId, command: 'true' });
        if (result.exitCode !== 0) throw new Error(`B1 TLS: shell/run of true exited ${result.exitCode}`);
      },
    });
    const times = await interleave(
      [side('unix', local, 'bench-b1-unix'), side('tls', remote, 'bench-b1-tls')],
      RUNS,
      WARMUP,
    );
    remote.close();
    const [u, t] = [times.get('unix')!, times.get('tls')!];
    const ms = (values: number[], p: number) => `${percentile(values, p).toFixed(2)} ms`;
    return [
      {
        label: 'B1 over TLS p50 ratio vs Unix socket',
        value: median(t) / median(u),
        note: `tls ${ms(t, 50)} (p99 ${ms(t, 99)}), unix ${ms(u, 50)} (p99 ${ms(u, 99)}), ${RUNS} runs each`,
      },
    ];
  } finally {
    await daemon.stop();
  }
}
