/**
 * The daemon in real containers (SPEC §12, §15), from the images `deploy/Dockerfile` builds
 * (container-image.ts: podman, the local base `execd-base`, Node from the build context), so the
 * image users build is the image tested. Both run with the runtime's default security (its
 * seccomp profile and capability set, no added privilege) as the image's non-root user:
 *
 * - the runtime image with its own command (a TLS listener), checked from the host over the
 *   published port: `auto` chose Landlock and every confined mode enforces what it claims;
 * - the Kubernetes example, `deploy/kubernetes/execd-sandbox.yaml` with its Secret, under
 *   `podman kube play` (a test-local copy: images, names and the Secret's material replaced): the
 *   daemon answers with the token, runs non-root under the default seccomp profile, and got Landlock.
 *
 * `.ci/run` runs it (via npm test). The images keep fixed names as the layer cache of the next run.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { connect } from '../../client/connect.js';
import type { ExecdClient as Client } from '../../client/index.js';
import { DaemonShutdown, JobList, JobPeek, JobRead, JobWait, SessionOpen, ShellStart } from '../../protocol/methods.js';
import { waitFor } from '../helpers/wait.js';
import {
  BASE_IMAGE,
  buildImages,
  limit,
  missingPrerequisite,
  podman,
  podmanQuietly,
  type BuiltImages,
} from './container-image.js';
import { makeCa, makeCert, pem } from './pki.js';

const REPO = join(import.meta.dirname, '..', '..');
/** The image's user (deploy/Dockerfile) and the pod's `runAsUser`. */
const UID = 10001;
/** The Node the image carries (not on the PATH of a command). */
const NODE = '/opt/execd/bin/node';

/** A directory owned by the containers' user (private with `mode` 0o700, as the daemon wants its own). */
function ownedDir(path: string, mode = 0o755): string {
  mkdirSync(path, { recursive: true });
  chmodSync(path, mode);
  chownSync(path, UID, UID);
  return path;
}

/** A scratch directory for one test, removed when it finishes. */
function scratch(prefix: string): string {
  const dir = ownedDir(mkdtempSync(join(tmpdir(), prefix)));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** TLS material for a daemon known as `names`, and a client certificate, in `dir`. */
function tlsMaterial(dir: string, names: string[]) {
  const ca = makeCa(dir, 'ca');
  const server = makeCert(dir, ca, 'server', names);
  const clientCa = makeCa(dir, 'client-ca');
  const client = makeCert(dir, clientCa, 'client');
  return { ca, server, clientCa, client };
}

/** Connects over TLS, retrying while the daemon in the container is still starting. */
async function connectWhenUp(url: string, options: Parameters<typeof connect>[1]): Promise<Client> {
  let last: unknown;
  const client = await waitFor(
    async () => {
      try {
        return await connect(url, { ...options, connectTimeoutMs: 2_000 });
      } catch (error) {
        last = error;
        return undefined;
      }
    },
    `the daemon at ${url}`,
    { timeoutMs: 60_000, intervalMs: 200 },
  ).catch((error: Error) => {
    throw new Error(`${error.message}: ${String(last)}`);
  });
  onTestFinished(() => client.close());
  return client;
}

/** The confined command's view of the container: uid, effective capabilities, seccomp mode. */
async function containerFacts(client: Client, sessionId: string) {
  const facts = await client.run({
    sessionId,
    command: "id -u; grep -E '^(CapEff|Seccomp):' /proc/self/status",
    sandboxPolicy: { mode: 'danger-full-access' },
  });
  return facts.stdout.text;
}

/** A container of the runtime image with its own command (a TLS listener on a published port). */
interface RuntimeContainer {
  name: string;
  workspace: string;
  stateDir: string;
  client: Client;
  /** Connects again (the published port after a restart of the container), `admin` with the admin token. */
  connect: (admin?: boolean) => Promise<Client>;
}

/** Runs the runtime image as users do (its user, tini, `execd serve` on TLS) and connects to it. */
async function runRuntimeImage(): Promise<RuntimeContainer> {
  const base = scratch('execd-ct-');
  const workspace = ownedDir(join(base, 'ws'));
  const volume = ownedDir(join(base, 'var'));
  const stateDir = ownedDir(join(volume, 'state'), 0o700);
  ownedDir(join(volume, 'run'), 0o700);
  const tlsDir = ownedDir(join(base, 'tls'));
  const pki = tlsMaterial(tlsDir, ['127.0.0.1']);
  for (const [from, to] of [
    [pki.server.cert, 'tls.crt'],
    [pki.server.key, 'tls.key'],
    [pki.clientCa.cert, 'client-ca.crt'],
  ] as const) {
    writeFileSync(join(tlsDir, to), readFileSync(from), { mode: 0o600 });
    chownSync(join(tlsDir, to), UID, UID);
  }
  const name = `execd-ct-${process.pid}-${Date.now()}`;
  // Registered first: a container that was created but failed to start is removed too.
  onTestFinished(() => podmanQuietly(['rm', '--force', '--time', '0', name]));
  podman([
    'run',
    '--detach',
    '--name',
    name,
    // podman here needs explicit limits, below this process's own hard ones.
    '--ulimit',
    `nofile=${limit('n')}:${limit('n')}`,
    '--ulimit',
    `nproc=${limit('u')}:${limit('u')}`,
    '--volume',
    `${tlsDir}:/etc/execd/tls:ro`,
    '--volume',
    `${volume}:/var/lib/execd`,
    '--volume',
    `${workspace}:${workspace}`,
    '--publish',
    '127.0.0.1::7443',
    // The image's own user, entrypoint (tini) and command (`execd serve` on TLS).
    images.runtime,
  ]);
  const connectAgain = async (admin = false) => {
    const port = /:(\d+)\s*$/.exec(podman(['port', name, '7443/tcp']).trim())![1]!;
    await waitFor(() => existsSync(join(stateDir, 'token')), 'the token', { timeoutMs: 60_000 });
    return connectWhenUp(`tls://127.0.0.1:${port}`, {
      ca: pem(pki.ca.cert),
      cert: pem(pki.client.cert),
      key: pem(pki.client.key),
      token: readFileSync(join(stateDir, 'token'), 'utf8').trim(),
      ...(admin && { admin: true, adminToken: readFileSync(join(stateDir, 'admin-token'), 'utf8').trim() }),
      clientName: 'container-test',
    });
  };
  return { name, workspace, stateDir, client: await connectAgain(), connect: connectAgain };
}

/** Every build of the test file shares these images. */
let images: BuiltImages;

describe('the images deploy/Dockerfile builds, run with the runtime defaults as their non-root user', () => {
  beforeAll(() => {
    const missing = missingPrerequisite();
    if (missing) throw new Error(`cannot run the container tests: ${missing}`);
    images = buildImages();
    console.log(
      `image build: ${images.seconds.toFixed(1)} s, ${images.cached} of ${images.steps} steps from the layer cache ` +
        `(${images.cached === images.steps ? 'warm' : images.cached === 0 ? 'cold' : 'partly cached'})`,
    );
  }, 900_000);

  it(
    'the runtime image: auto chooses Landlock, and every confined mode enforces what it claims',
    { timeout: 180_000 },
    async () => {
      const started = performance.now();
      const { client, workspace } = await runRuntimeImage();
      const { sandbox } = client.info.capabilities;
      console.log(
        `runtime image: the daemon answered ${((performance.now() - started) / 1000).toFixed(2)} s after podman run; ${JSON.stringify(sandbox)}`,
      );
      expect(sandbox).toMatchObject({ backend: 'landlock' });
      expect(sandbox.enforces).toEqual(
        expect.arrayContaining(['files', 'daemon-files', 'daemon-socket', 'network-off']),
      );
      await client.call(SessionOpen, {
        sessionId: 's1',
        cwd: workspace,
        // The test's own look from outside the sandbox widens to full access: declared, as SPEC §6 asks.
        sandbox: { mode: 'workspace-write', escalationTargets: ['danger-full-access'] },
      });

      // The container's condition: the image's uid, no effective capability, a seccomp filter, and bwrap refused.
      const facts = await containerFacts(client, 's1');
      const bwrap = await client.run({
        sessionId: 's1',
        command: 'bwrap --ro-bind / / --unshare-pid --proc /proc true',
        sandboxPolicy: { mode: 'danger-full-access' },
      });
      console.log(`runtime image: ${facts.trim().replace(/\n/g, ' | ')} | ${bwrap.stderr.text.trim()}`);
      expect(facts).toBe(`${UID}\nCapEff:\t0000000000000000\nSeccomp:\t2\n`);
      expect(bwrap.stderr.text).toMatch(/^bwrap: /);

      const inside = await client.run({ sessionId: 's1', command: 'echo in > in.txt && cat in.txt' });
      expect(inside).toMatchObject({ exitCode: 0, sandbox: { denied: false, enforcement: 'landlock' } });
      const outside = await client.run({ sessionId: 's1', command: 'echo x > /var/tmp/execd-ct-out' });
      expect(outside.sandbox).toEqual({ mode: 'workspace-write', denied: true, enforcement: 'landlock' });
      const free = await client.run({
        sessionId: 's1',
        command: 'echo x > /var/tmp/execd-ct-out && rm /var/tmp/execd-ct-out',
        sandboxPolicy: { mode: 'danger-full-access' },
      });
      expect(free.exitCode).toBe(0);

      const readOnly = await client.run({
        sessionId: 's1',
        command: 'echo x > ro.txt',
        sandboxPolicy: { mode: 'read-only' },
      });
      expect(readOnly.sandbox).toEqual({ mode: 'read-only', denied: true, enforcement: 'landlock' });
      expect(existsSync(join(workspace, 'ro.txt'))).toBe(false);

      const probe = (target: string) =>
        `${NODE} -e "require('net').connect(${target}).on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log('refused ' + e.code); process.exit(3); })"`;
      const daemonTry = await client.run({
        sessionId: 's1',
        command: `cat /var/lib/execd/state/token; ${probe(`'/var/lib/execd/run/execd.sock'`)}`,
      });
      expect(daemonTry.stderr.text).toContain('Permission denied');
      expect(daemonTry.stdout.text).toBe('refused EACCES\n');

      if (sandbox.enforces.includes('signals')) {
        // PID 1 (tini) is outside the sandbox: no signal reaches it, not even the null one.
        const signal = await client.run({ sessionId: 's1', command: 'kill -0 1' });
        expect(signal.exitCode).not.toBe(0);
        expect(signal.stderr.text).toContain('Operation not permitted');
      }

      // network 'off' against a listener on the container's loopback, started unconfined.
      await client.call(ShellStart, {
        sessionId: 's1',
        command: `${NODE} -e "require('net').createServer((s) => s.end()).listen(7801, '127.0.0.1')"`,
        sandboxPolicy: { mode: 'danger-full-access' },
      });
      await waitFor(
        async () =>
          (await client.run({ sessionId: 's1', command: probe(`7801, '127.0.0.1'`) })).stdout.text === 'CONNECTED\n',
        'the loopback listener',
      );
      const off = await client.run({
        sessionId: 's1',
        command: probe(`7801, '127.0.0.1'`),
        sandboxPolicy: { mode: 'workspace-write', network: 'off' },
      });
      expect(off.stdout.text).toBe('refused EACCES\n');
    },
  );

  it(
    'the Kubernetes example under podman kube play: the daemon answers with the token, non-root, default seccomp, Landlock',
    { timeout: 180_000 },
    async () => {
      const base = scratch('execd-kt-');
      const suffix = `${process.pid}-${Date.now()}`;
      const pod = `execd-kt-${suffix}`;
      const serverName = `${pod}.default.svc`;
      const pki = tlsMaterial(base, [serverName]);
      const token = randomBytes(32).toString('hex');
      const manifest = join(base, 'execd-sandbox.yaml');
      // The repository's manifest, edited mechanically: the images are the ones just built (the
      // workload's a glibc-based image used unchanged), the names unique, the Secret real material.
      // The Secret's material, as the files Kubernetes mounts from it (fsGroup: group-readable by the pod's group).
      const secretDir = join(base, 'secret');
      mkdirSync(secretDir);
      const material: Record<string, string> = {
        token,
        'tls.crt': readFileSync(pki.server.cert, 'utf8'),
        'tls.key': readFileSync(pki.server.key, 'utf8'),
        'client-ca.crt': readFileSync(pki.clientCa.cert, 'utf8'),
      };
      for (const [key, value] of Object.entries(material)) {
        writeFileSync(join(secretDir, key), value, { mode: 0o440 });
        chownSync(join(secretDir, key), 0, UID);
      }
      // The repository's manifest, edited mechanically: the images are the ones just built (the
      // workload's a glibc-based image used unchanged) and the names unique. The Secret's keys are
      // checked against the files made above, which reach the pod as a hostPath volume in place of
      // the secret volume: podman 4.3 writes a secret volume's `data` still base64-encoded and
      // ignores `stringData`, so its secret volumes cannot carry a PEM file.
      const edit = [
        'import json, sys, yaml',
        'docs = list(yaml.safe_load_all(open(sys.argv[1])))',
        'args = json.loads(sys.argv[3])',
        "secret = next(doc for doc in docs if doc['kind'] == 'Secret')",
        "assert sorted(secret['stringData']) == sorted(args['keys']), secret['stringData'].keys()",
        "pod = next(doc for doc in docs if doc['kind'] == 'Pod')",
        "pod['metadata']['name'] = args['pod']",
        "pod['metadata']['labels']['sandbox'] = args['pod']",
        "pod['spec']['initContainers'][0]['image'] = args['bundle']",
        "pod['spec']['containers'][0]['image'] = args['workload']",
        "for volume in pod['spec']['volumes']:",
        "    if volume.get('secret', {}).get('secretName') == secret['metadata']['name']:",
        "        del volume['secret']",
        "        volume['hostPath'] = {'path': args['secretDir'], 'type': 'Directory'}",
        "open(sys.argv[2], 'w').write(yaml.safe_dump(pod))",
      ].join('\n');
      execFileSync('/usr/bin/python3', [
        '-c',
        edit,
        join(REPO, 'deploy', 'kubernetes', 'execd-sandbox.yaml'),
        manifest,
        JSON.stringify({
          pod,
          bundle: images.bundle,
          workload: BASE_IMAGE,
          keys: Object.keys(material),
          secretDir,
        }),
      ]);
      // kube play takes no --ulimit: the same explicit limits, from a containers.conf of the test's.
      const conf = join(base, 'containers.conf');
      writeFileSync(
        conf,
        `[containers]\ndefault_ulimits = ["nofile=${limit('n')}:${limit('n')}", "nproc=${limit('u')}:${limit('u')}"]\n`,
      );
      const env = { ...process.env, CONTAINERS_CONF: conf };
      // Registered first: whatever part of the pod was created is removed, its emptyDir volumes too.
      onTestFinished(() => {
        podmanQuietly(['kube', 'down', manifest], env);
        podmanQuietly(['pod', 'rm', '--force', pod], env);
        podmanQuietly(['volume', 'rm', '--force', 'execd', 'execd-state', 'workspace'], env);
      });
      const started = performance.now();
      podman(['kube', 'play', manifest], env);
      const infra = (JSON.parse(podman(['pod', 'inspect', pod])) as { InfraContainerID: string }).InfraContainerID;
      const networks = (
        JSON.parse(podman(['inspect', infra])) as Array<{
          NetworkSettings: { Networks: Record<string, { IPAddress: string }> };
        }>
      )[0]!.NetworkSettings.Networks;
      const ip = Object.values(networks)[0]!.IPAddress;
      const client = await connectWhenUp(`tls://${ip}:7443`, {
        ca: pem(pki.ca.cert),
        cert: pem(pki.client.cert),
        key: pem(pki.client.key),
        servername: serverName,
        token,
        clientName: 'kube-play-test',
      });
      const { sandbox } = client.info.capabilities;
      console.log(
        `kube play: the daemon answered at ${ip} ${((performance.now() - started) / 1000).toFixed(2)} s after podman kube play; ${JSON.stringify(sandbox)}`,
      );
      expect(sandbox).toMatchObject({ backend: 'landlock' });
      await expect(
        connect(`tls://${ip}:7443`, {
          ca: pem(pki.ca.cert),
          cert: pem(pki.client.cert),
          key: pem(pki.client.key),
          servername: serverName,
          token: 'f'.repeat(64),
        }),
      ).rejects.toThrow();

      await client.call(SessionOpen, {
        sessionId: 'k1',
        cwd: '/workspace',
        sandbox: { mode: 'workspace-write', escalationTargets: ['danger-full-access'] },
      });
      const facts = await containerFacts(client, 'k1');
      console.log(`kube play: ${facts.trim().replace(/\n/g, ' | ')}`);
      expect(facts).toBe(`${UID}\nCapEff:\t0000000000000000\nSeccomp:\t2\n`);
      const inside = await client.run({ sessionId: 'k1', command: 'echo in > in.txt && cat in.txt' });
      expect(inside).toMatchObject({ exitCode: 0, sandbox: { denied: false, enforcement: 'landlock' } });
      const daemonTry = await client.run({ sessionId: 'k1', command: 'cat /var/lib/execd/state/token' });
      expect(daemonTry.sandbox).toEqual({ mode: 'workspace-write', denied: true, enforcement: 'landlock' });

      // The kubelet's probes and a scrape, from outside the pod on the --metrics port.
      const scrape = async (path: string) => {
        const response = await fetch(`http://${ip}:9464${path}`);
        return { status: response.status, text: await response.text() };
      };
      expect(await scrape('/healthz')).toEqual({ status: 200, text: 'ok\n' });
      expect(await scrape('/readyz')).toEqual({ status: 200, text: 'ready\n' });
      const metrics = await scrape('/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.text).toMatch(/^execd_commands_total\{kind="run",mode="workspace-write",result="denied"\} 1$/m);
      expect(metrics.text).toMatch(/^execd_sandbox_denials_total\{mode="workspace-write"\} 1$/m);
      expect(metrics.text).toMatch(/^execd_connections\{transport="tls"\} [1-9]/m);
    },
  );

  it(
    'an upgrade in place under tini: same pid, a confined and an unconfined job read on without a gap and end with their exit code; a job the container took down reads lost',
    { timeout: 240_000 },
    async () => {
      const { name, client, workspace, connect: connectAgain } = await runRuntimeImage();
      const sandbox = { mode: 'workspace-write' as const, escalationTargets: ['danger-full-access' as const] };
      await client.call(SessionOpen, { sessionId: 'u1', cwd: workspace, sandbox });
      const before = client.info.daemon;
      // One confined job (the session's mode: Landlock here, its two streams through pipes), one not.
      const command = 'for i in $(seq 1 60); do echo "line $i"; echo "err $i" >&2; sleep 0.1; done; exit 7';
      const confined = await client.call(ShellStart, { sessionId: 'u1', command });
      const free = await client.call(ShellStart, {
        sessionId: 'u1',
        command,
        sandboxPolicy: { mode: 'danger-full-access' },
      });
      const jobs = [confined.jobId, free.jobId];
      for (const jobId of jobs)
        await waitFor(
          async () => (await client.call(JobPeek, { sessionId: 'u1', jobId })).stderr.text.includes('err 3\n'),
          `${jobId} to count to 3`,
        );
      const early = await Promise.all(jobs.map((jobId) => client.call(JobRead, { sessionId: 'u1', jobId })));
      // The CLI in the container, as docs/deployment.md shows it.
      const upgraded = podman(['exec', name, 'execd', 'upgrade']);
      console.log(`upgrade in place: ${upgraded.trim()}`);
      expect(upgraded).toMatch(new RegExp(`^execd daemon upgraded in place \\(pid ${before.pid}\\)`));
      const after = await waitFor(
        async () => {
          const next = await connectAgain();
          if (next.info.daemon.startedAt !== before.startedAt) return next;
          next.close();
          return undefined;
        },
        'the upgraded daemon',
        { timeoutMs: 60_000 },
      );
      console.log(
        `upgrade in place: pid ${before.pid} -> ${after.info.daemon.pid}, container running: ${podman(['inspect', '--format', '{{.State.Running}}', name]).trim()}`,
      );
      expect(after.info.daemon.pid).toBe(before.pid);
      await after.call(SessionOpen, { sessionId: 'u1', cwd: workspace, sandbox });
      const listed = await after.call(JobList, { sessionId: 'u1' });
      expect(listed.map((job) => [job.id, job.status])).toEqual(jobs.map((jobId) => [jobId, 'running']));
      for (const [index, jobId] of jobs.entries()) {
        const settled = await after.call(JobWait, { sessionId: 'u1', jobId, timeoutMs: 30_000 });
        expect(settled).toMatchObject({ status: 'completed', exitCode: 7 });
        const rest = await after.call(JobRead, { sessionId: 'u1', jobId });
        const text = early[index]!.delta + rest.delta;
        const lines = (prefix: string) =>
          [...text.matchAll(new RegExp(`^${prefix} (\\d+)$`, 'gm'))].map((match) => Number(match[1]));
        console.log(
          `upgrade in place: ${jobId} (${settled.sandbox?.enforcement ?? 'unconfined'}): ${early[index]!.delta.split('\n').length - 1} lines read before, ${lines('line').length} + ${lines('err').length} in all`,
        );
        const all = Array.from({ length: 60 }, (_, n) => n + 1);
        expect(lines('line')).toEqual(all);
        expect(lines('err')).toEqual(all);
      }
      expect((await after.call(JobList, { sessionId: 'u1' }))[0]?.sandbox).toMatchObject({ enforcement: 'landlock' });

      // A job kept by a stop dies with the container (tini exits with the daemon): the next daemon says lost.
      const doomed = await after.call(ShellStart, {
        sessionId: 'u1',
        command: 'sleep 300',
        sandboxPolicy: { mode: 'danger-full-access' },
      });
      const stopper = await connectAgain(true);
      await stopper.call(DaemonShutdown, { keepJobs: true });
      await waitFor(
        () => podman(['inspect', '--format', '{{.State.Running}}', name]).trim() === 'false',
        'the container to stop',
        { timeoutMs: 60_000 },
      );
      podman(['start', name]);
      const restarted = await connectAgain();
      await restarted.call(SessionOpen, { sessionId: 'u1', cwd: workspace, sandbox });
      const lost = (await restarted.call(JobList, { sessionId: 'u1' })).find((job) => job.id === doomed.jobId);
      console.log(`after the container restart: ${doomed.jobId} ${lost?.status} (${lost?.detail})`);
      expect(lost).toMatchObject({ status: 'lost', exitCode: null });
    },
  );
});
