/**
 * The images `deploy/Dockerfile` builds, made with podman for the container tests: no registry
 * serves a base or a Node image here, so the base is the local `execd-base` (`.ci/container-base`)
 * and Node 20 is the host's, given as the build context `node` — the Dockerfile's own way for a
 * machine without a registry. Each image keeps one fixed name, so a warm build reuses every layer.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, linkSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The local base image `.ci/container-base` makes. */
export const BASE_IMAGE = 'localhost/execd-base';
/** The label of every image (intermediate ones too) these builds make: stale ones are pruned by it. */
const LABEL = 'io.execd.test=deploy-dockerfile';
const REPO = join(import.meta.dirname, '..', '..');

/** Why the container tests cannot run here, or undefined when they can. */
export function missingPrerequisite(): string | undefined {
  if (spawnSync('podman', ['--version']).status !== 0) return 'podman is not installed';
  if (spawnSync('runc', ['--version']).status !== 0) return 'runc is not installed (podman here needs --runtime runc)';
  if (spawnSync('podman', ['image', 'exists', BASE_IMAGE]).status !== 0)
    return `the local base image ${BASE_IMAGE} is missing: run .ci/container-base (debootstrap + podman import)`;
  return undefined;
}

/** Runs podman with runc (crun fails on this VM) and returns its stdout. */
export function podman(args: string[], env?: NodeJS.ProcessEnv): string {
  return execFileSync('podman', ['--runtime', 'runc', ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
    ...(env && { env }),
  });
}

/** Runs podman for a cleanup: its failure (nothing left to remove) is no error. */
export function podmanQuietly(args: string[], env?: NodeJS.ProcessEnv): void {
  spawnSync('podman', ['--runtime', 'runc', ...args], { stdio: 'ignore', ...(env && { env }) });
}

/** A container limit for `ulimit -<flag>` (`n` open files, `u` processes): 4096, or the soft limit here if lower. */
export function limit(flag: 'n' | 'u'): number {
  const value = execFileSync('bash', ['-c', `ulimit -S${flag}`], { encoding: 'utf8' }).trim();
  return value === 'unlimited' ? 4096 : Math.min(4096, Number(value));
}

/**
 * Removes the labelled images no tag leads to any more (the layers of earlier sources). One prune
 * removes the dangling images only, which leaves their parents dangling: repeated until none is left.
 */
function pruneStale(): void {
  for (let pass = 0; pass < 20; pass++) {
    const result = spawnSync('podman', ['image', 'prune', '--force', '--filter', `label=${LABEL}`], {
      encoding: 'utf8',
    });
    if (result.status !== 0 || result.stdout.trim() === '') return;
  }
}

/** The images of one build and what it took. */
export interface BuiltImages {
  /** Way 1: the runtime image (the default target). */
  runtime: string;
  /** Way 2: the bundle an init container copies. */
  bundle: string;
  seconds: number;
  /** Steps taken from the layer cache, of all steps: all of them in a warm build. */
  cached: number;
  steps: number;
}

/**
 * The CA bundle the build's npm verifies the registry with: this machine's extra CAs (a
 * TLS-intercepting proxy's), else the system bundle, which holds them once installed.
 */
function caBundle(): string | undefined {
  const extra = process.env.NODE_EXTRA_CA_CERTS;
  if (extra && existsSync(extra)) return extra;
  const system = '/etc/ssl/certs/ca-certificates.crt';
  return existsSync(system) ? system : undefined;
}

/** A Node 20 installation (bin/node, lib/node_modules/npm) from the host's, with its timestamps kept for the cache. */
function nodeContext(dir: string): void {
  mkdirSync(join(dir, 'bin'));
  try {
    linkSync(process.execPath, join(dir, 'bin', 'node'));
  } catch {
    cpSync(process.execPath, join(dir, 'bin', 'node'), { preserveTimestamps: true });
  }
  const npm = join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm');
  cpSync(npm, join(dir, 'lib', 'node_modules', 'npm'), { recursive: true, preserveTimestamps: true });
}

/**
 * Builds `deploy/Dockerfile`'s build stage, runtime image and bundle (the build stage tagged too,
 * so pruning the stale images of earlier sources leaves its cache), then prunes those stale ones.
 */
export function buildImages(): BuiltImages {
  const context = mkdtempSync('/var/tmp/execd-node-');
  try {
    nodeContext(context);
    const ca = caBundle();
    const started = performance.now();
    let cached = 0;
    let steps = 0;
    const build = (target: string, tag: string) => {
      const result = spawnSync(
        'podman',
        [
          '--runtime',
          'runc',
          'build',
          '--file',
          join(REPO, 'deploy', 'Dockerfile'),
          '--target',
          target,
          '--label',
          LABEL,
          '--build-arg',
          `BASE_IMAGE=${BASE_IMAGE}`,
          '--build-arg',
          'NODE_FROM=context',
          '--build-context',
          `node=${context}`,
          ...(ca ? ['--secret', `id=ca,src=${ca}`] : []),
          '--tag',
          tag,
          REPO,
        ],
        { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      );
      const output = `${result.stdout}${result.stderr}`;
      if (result.status !== 0) throw new Error(`podman build --target ${target} failed:\n${output.slice(-4000)}`);
      steps += output.match(/^(?:\[\d+\/\d+\] )?STEP \d+\/\d+: (?!FROM )/gm)?.length ?? 0;
      cached += output.match(/^--> Using cache /gm)?.length ?? 0;
      return tag;
    };
    build('build', 'localhost/execd-test-build');
    const runtime = build('runtime', 'localhost/execd-test');
    const bundle = build('bundle', 'localhost/execd-test-bundle');
    const seconds = (performance.now() - started) / 1000;
    pruneStale();
    return { runtime, bundle, seconds, cached, steps };
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}
