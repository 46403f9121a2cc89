/**
 * A small network made by a test, as root: network namespaces joined by veth pairs, every name
 * carrying a random suffix so concurrent runs never collide, and every address a private one on a
 * veth inside a namespace the lab created. `remove()` undoes all of it, also after a failure.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, onTestFinished } from 'vitest';
import { CLI } from '../helpers/daemon.js';

/** A veth pair from the hub namespace to one leaf namespace. */
export interface Link {
  /** The leaf's namespace. */
  ns: string;
  /** The hub end's interface name and address. */
  hubIf: string;
  hubIp: string;
  /** The leaf end's interface name and address. */
  leafIf: string;
  leafIp: string;
}

function ip(args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A hub namespace with one veth link to each leaf namespace. */
export class NetnsLab {
  readonly suffix = randomBytes(3).toString('hex');
  readonly hub = `execd-hub-${this.suffix}`;
  readonly links = new Map<string, Link>();
  private readonly namespaces: string[] = [];
  private readonly processes: ChildProcess[] = [];
  /** 10.<octet>.N.0/24 per link: a private range, used only inside the lab's namespaces. */
  private readonly octet = 16 + (randomBytes(1)[0]! % 200);

  private addNamespace(name: string): void {
    ip(['netns', 'add', name]);
    this.namespaces.push(name);
    ip(['-n', name, 'link', 'set', 'lo', 'up']);
  }

  /** Creates the hub namespace. */
  create(): void {
    this.addNamespace(this.hub);
  }

  /** Creates leaf `name` and its link to the hub. */
  addLeaf(name: string): Link {
    const index = this.links.size + 1;
    const ns = `execd-${name.toLowerCase()}-${this.suffix}`;
    this.addNamespace(ns);
    const link: Link = {
      ns,
      hubIf: `x${name.toLowerCase()}${this.suffix}h`,
      hubIp: `10.${this.octet}.${index}.1`,
      leafIf: `x${name.toLowerCase()}${this.suffix}l`,
      leafIp: `10.${this.octet}.${index}.2`,
    };
    this.join(link);
    this.links.set(name, link);
    return link;
  }

  /** Makes `link`'s veth pair, with its addresses, up. */
  private join(link: Link): void {
    // Both ends are created directly inside the lab's namespaces, never in the host's.
    ip(['link', 'add', link.hubIf, 'netns', this.hub, 'type', 'veth', 'peer', 'name', link.leafIf, 'netns', link.ns]);
    ip(['-n', this.hub, 'addr', 'add', `${link.hubIp}/24`, 'dev', link.hubIf]);
    ip(['-n', link.ns, 'addr', 'add', `${link.leafIp}/24`, 'dev', link.leafIf]);
    ip(['-n', this.hub, 'link', 'set', link.hubIf, 'up']);
    ip(['-n', link.ns, 'link', 'set', link.leafIf, 'up']);
  }

  /**
   * Cuts leaf `name` off: its link is deleted (both ends go), nothing is told to either side, and
   * packets in flight are lost. The host itself lives on; `restore` links it again.
   */
  cut(name: string): void {
    ip(['-n', this.hub, 'link', 'delete', this.links.get(name)!.hubIf]);
  }

  /** Links leaf `name` again as it was (same interfaces, same addresses) after `cut`. */
  restore(name: string): void {
    this.join(this.links.get(name)!);
  }

  /** Runs `command` inside namespace `ns`; the process is killed by `remove()`. */
  spawnIn(ns: string, command: string[], env: NodeJS.ProcessEnv = process.env): ChildProcess {
    // `ip netns exec` execs the command itself: the child's pid is the command's.
    const child = spawn('ip', ['netns', 'exec', ns, ...command], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.processes.push(child);
    return child;
  }

  /** Makes leaf `name`'s host vanish: its namespace is deleted and its link with it. */
  vanish(name: string): void {
    const link = this.links.get(name)!;
    // The namespace lives on while the daemon is in it; deleting the link cuts it off silently.
    ip(['netns', 'delete', link.ns]);
    ip(['-n', this.hub, 'link', 'delete', link.hubIf]);
  }

  /** Kills every process, then deletes every namespace (their veths go with them). */
  async remove(): Promise<void> {
    await Promise.all(this.processes.map((child) => stopProcess(child)));
    for (const ns of this.namespaces) {
      try {
        ip(['netns', 'delete', ns]);
      } catch {
        // Already deleted (vanish) or never made.
      }
    }
  }
}

/** SIGTERM, then SIGKILL after a while; resolves once the process has exited. */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** True when namespace `name` exists. */
export function namespaceExists(name: string): boolean {
  return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .some((line) => line.split(' ')[0] === name);
}

/**
 * A lab with its hub made and a temp dir beside it, both removed when the test finishes; the
 * teardown checks that no namespace of the lab is left.
 */
export function startLab(prefix: string): { lab: NetnsLab; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const lab = new NetnsLab();
  onTestFinished(async () => {
    await lab.remove();
    rmSync(dir, { recursive: true, force: true });
    for (const ns of [lab.hub, ...[...lab.links.values()].map((link) => link.ns)])
      expect(namespaceExists(ns), `namespace ${ns} removed`).toBe(false);
  });
  lab.create();
  return { lab, dir };
}

/** Collects a child's output as text. */
export function collect(child: ChildProcess, stream: 'stdout' | 'stderr'): () => string {
  let text = '';
  child[stream]!.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  return () => text;
}

/**
 * Starts `execd serve` inside `link`'s leaf namespace, listening on TLS at the leaf's address, with
 * its socket and state dir under `home`; with `clientCa`, only clients it signed get in.
 */
export function serveInLeaf(
  lab: NetnsLab,
  link: Link,
  home: string,
  port: number,
  tls: { cert: string; key: string; clientCa?: string },
): ChildProcess {
  return lab.spawnIn(link.ns, [
    process.execPath,
    CLI,
    'serve',
    '--socket',
    join(home, 'run', 'execd.sock'),
    '--state-dir',
    join(home, 'state'),
    '--listen',
    `tls://${link.leafIp}:${port}`,
    '--tls-cert',
    tls.cert,
    '--tls-key',
    tls.key,
    ...(tls.clientCa === undefined ? [] : ['--tls-client-ca', tls.clientCa]),
  ]);
}
