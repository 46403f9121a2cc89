/**
 * deploy/ (SPEC §12), checked statically: the manifests parse as YAML and fit together, and every
 * execd command line in them names a real subcommand with flags that subcommand's --help lists —
 * also the ones no run reaches (the health check, the probes). container.test.ts builds the
 * Dockerfile and runs the image and the Kubernetes example for real.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseListenUrl } from '../../daemon/net/listeners.js';
import { parseMetricsUrl } from '../../daemon/observability/address.js';
import { CLI } from '../helpers/daemon.js';

const DEPLOY = join(import.meta.dirname, '..', '..', 'deploy');
const DOCKERFILE = join(DEPLOY, 'Dockerfile');
const MANIFEST = join(DEPLOY, 'kubernetes', 'execd-sandbox.yaml');

/** The fields of the manifest's objects these tests read (not validated: a missing one fails a test). */
interface Container {
  command?: string[];
  args?: string[];
  ports: Array<{ name: string; containerPort: number }>;
  volumeMounts: Array<{ name: string }>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
}
interface Probe {
  exec?: { command: string[] };
  httpGet?: { path: string; port: string | number };
}
interface Secret {
  kind: 'Secret';
  metadata: { name: string };
  stringData: Record<string, string>;
}
interface Pod {
  kind: 'Pod';
  metadata: { name: string; labels: Record<string, string>; annotations?: Record<string, string> };
  spec: { initContainers?: Container[]; containers: Container[]; volumes: unknown[]; securityContext: unknown };
}
interface Service {
  kind: 'Service';
  metadata: { name: string };
  spec: { selector: Record<string, string>; ports: Array<{ targetPort: string | number }> };
}
type Manifest = Secret | Pod | Service;

/** Every document of a YAML file, parsed by PyYAML (Debian's python3-yaml). */
function parseYaml(path: string): Manifest[] {
  const script = 'import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))';
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', script, path], { encoding: 'utf8' })) as Manifest[];
}

/** The exec-form arguments of each Dockerfile instruction `name` (`CMD ["a", "b"]`). */
function dockerExecForms(text: string, name: string): string[][] {
  const joined = text.replace(/\\\n/g, ' ');
  return [...joined.matchAll(new RegExp(`^${name}\\s+(?:--\\S+\\s+)*(?:CMD\\s+)?(\\[.*\\])\\s*$`, 'gm'))].map(
    (match) => JSON.parse(match[1]!) as string[],
  );
}

/** The execd invocations in a command: the words after an `execd` executable, up to a shell separator. */
function execdInvocations(words: string[]): string[][] {
  const found: string[][] = [];
  words.forEach((word, index) => {
    if (!/(^|\/)execd$/.test(word)) return;
    const rest = words.slice(index + 1);
    const end = rest.findIndex((next) => ['&&', '||', ';', '|'].includes(next));
    found.push(end === -1 ? rest : rest.slice(0, end));
  });
  return found;
}

/** Every command a pod runs: containers' command + args (a `sh -c` script split into words) and exec probes. */
function podCommands(pod: Pod): string[][] {
  const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  const commands: string[][] = [];
  for (const container of containers) {
    const words = [...(container.command ?? []), ...(container.args ?? [])].flatMap((part) =>
      part.split(/\s+/).filter(Boolean),
    );
    commands.push(words);
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe])
      if (probe?.exec) commands.push(probe.exec.command);
  }
  return commands;
}

const helpCache = new Map<string, string>();
function helpOf(subcommand: string): string {
  if (!helpCache.has(subcommand))
    helpCache.set(subcommand, execFileSync(process.execPath, [CLI, subcommand, '--help'], { encoding: 'utf8' }));
  return helpCache.get(subcommand)!;
}

/** Checks one invocation against the CLI; returns the problems found. */
function checkInvocation(words: string[]): string[] {
  const [subcommand, ...args] = words;
  const topHelp = execFileSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
  if (!subcommand || !new RegExp(`^  ${subcommand} `, 'm').test(topHelp)) return [`no subcommand ${subcommand}`];
  const help = helpOf(subcommand);
  const problems: string[] = [];
  args.forEach((arg, index) => {
    if (!arg.startsWith('--')) return;
    const flag = arg.split('=')[0]!;
    if (!new RegExp(`${flag}[\\s\\]=]`).test(help)) problems.push(`execd ${subcommand} has no ${flag}`);
    if (flag === '--listen') {
      const spec = parseListenUrl(arg.includes('=') ? arg.slice(flag.length + 1) : args[index + 1]!);
      if (typeof spec === 'string') problems.push(spec);
    }
    if (flag === '--metrics') {
      const spec = parseMetricsUrl(arg.includes('=') ? arg.slice(flag.length + 1) : args[index + 1]!);
      if (typeof spec === 'string') problems.push(spec);
    }
  });
  return problems;
}

describe('deploy/Dockerfile', () => {
  const text = readFileSync(DOCKERFILE, 'utf8');

  it('builds FROM any base image with Node 20, bubblewrap, tini, a non-root user and a state volume', () => {
    expect(text.indexOf('ARG BASE_IMAGE=')).toBeLessThan(text.indexOf('FROM '));
    expect(text).toMatch(/^ARG BASE_IMAGE=debian:\S+-slim$/m);
    expect(text).toMatch(/^FROM node:20-\S+ AS node-image$/m);
    expect(text).toMatch(/^FROM node-\$\{NODE_FROM\} AS build$/m);
    expect(text).toMatch(/^FROM \$\{BASE_IMAGE\} AS runtime$/m);
    // Installed where the base lacks them (the runtime stage's list of packages to check).
    expect(text).toMatch(/for p in bubblewrap tini ca-certificates; do dpkg -s/);
    expect(text).toMatch(/apt-get install -y --no-install-recommends \$missing/);
    expect(text).toMatch(/^USER execd$/m);
    expect(text).toMatch(/^VOLUME \/var\/lib\/execd$/m);
    expect(dockerExecForms(text, 'ENTRYPOINT')).toEqual([['/usr/bin/tini', '--']]);
    expect(dockerExecForms(text, 'HEALTHCHECK')[0]?.slice(0, 2)).toEqual(['execd', 'status']);
  });

  it('runs only execd command lines the CLI accepts', () => {
    const invocations = ['CMD', 'HEALTHCHECK', 'ENTRYPOINT']
      .flatMap((name) => dockerExecForms(text, name))
      .flatMap(execdInvocations);
    expect(invocations.map((words) => words[0]).sort()).toEqual(['serve', 'status']);
    expect(invocations.flatMap(checkInvocation)).toEqual([]);
  });
});

describe('deploy/kubernetes', () => {
  const docs = parseYaml(MANIFEST);
  const byKind = <K extends Manifest['kind']>(kind: K) =>
    docs.find((doc): doc is Extract<Manifest, { kind: K }> => doc.kind === kind)!;

  it('parses as a Secret, a Pod and a Service that fit together', () => {
    expect(docs.map((doc) => doc.kind)).toEqual(['Secret', 'Pod', 'Service']);
    const secret = byKind('Secret');
    const pod = byKind('Pod');
    const service = byKind('Service');
    expect(Object.keys(secret.stringData).sort()).toEqual(['client-ca.crt', 'tls.crt', 'tls.key', 'token']);
    expect(pod.spec.volumes).toContainEqual(
      expect.objectContaining({ secret: expect.objectContaining({ secretName: secret.metadata.name }) as unknown }),
    );
    for (const [key, value] of Object.entries(service.spec.selector)) expect(pod.metadata.labels[key]).toBe(value);
    const workload = pod.spec.containers[0]!;
    expect(workload.ports.map((port) => port.name)).toContain(service.spec.ports[0]!.targetPort);
    expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    // The workload starts execd from the shared emptyDir under tini.
    expect(workload.command!.slice(0, 2)).toEqual(['/execd/bin/tini', '--']);
    expect(pod.spec.initContainers![0]!.volumeMounts[0]!.name).toBe(workload.volumeMounts[0]!.name);
  });

  it('probes /healthz and /readyz over HTTP on the --metrics port, and annotates the pod for scraping', () => {
    const pod = byKind('Pod');
    const workload = pod.spec.containers[0]!;
    const metrics = workload.ports.find((port) => port.name === 'metrics')!;
    expect(workload.readinessProbe).toMatchObject({ httpGet: { path: '/readyz', port: 'metrics' } });
    expect(workload.livenessProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'metrics' } });
    // No probe starts a process.
    expect([workload.readinessProbe, workload.livenessProbe, workload.startupProbe].filter((p) => p?.exec)).toEqual([]);
    expect(pod.metadata.annotations).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(metrics.containerPort),
      'prometheus.io/path': '/metrics',
    });
    // The serve line listens there.
    const serve = podCommands(pod)
      .flatMap(execdInvocations)
      .find((words) => words[0] === 'serve')!;
    const address = serve[serve.indexOf('--metrics') + 1]!;
    expect(parseMetricsUrl(address)).toMatchObject({ tls: false, port: metrics.containerPort });
  });

  it('runs only execd command lines the CLI accepts', () => {
    const invocations = podCommands(byKind('Pod')).flatMap(execdInvocations);
    expect(invocations.map((words) => words[0]).sort()).toEqual(['serve']);
    expect(invocations.flatMap(checkInvocation)).toEqual([]);
  });

  it('the checker itself catches an unknown flag and an unknown subcommand', () => {
    expect(checkInvocation(['serve', '--tls-certificate', 'x'])).toEqual(['execd serve has no --tls-certificate']);
    expect(checkInvocation(['status', '--listen', 'x'])).toContain('execd status has no --listen');
    expect(checkInvocation(['serv'])).toEqual(['no subcommand serv']);
    expect(checkInvocation(['serve', '--listen', 'tcp://0.0.0.0:1'])[0]).toMatch(/loopback/);
    expect(checkInvocation(['serve', '--metrics', 'ftp://0.0.0.0:1'])[0]).toMatch(/^--metrics must be/);
  });
});
