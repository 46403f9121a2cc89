/**
 * The `environ` scope, where no cgroup can be written (an unprivileged container): every command
 * carries `EXECD_SCOPE=<tag>:<unit>` in its environment, the tag an HMAC of the session id under
 * the daemon's token (so no other daemon's or session's processes match, and a command cannot name
 * another session without reading one of that session's processes), and /proc is scanned for it.
 * A process that clears or rewrites its environment (`exec env -i …`) is not found.
 */
import { createHmac } from 'node:crypto';
import { readdirSync } from 'node:fs';
import type { EnvMap } from '../runs/env.js';
import { MarkerCache, SCOPE_ENV } from './scope-marker.js';
import { readMembers, type Member, type ScopeStrategy } from './scope-strategy.js';

/** Units found by the marker in their processes' environment. */
export class EnvironScope implements ScopeStrategy {
  readonly mode = 'environ';
  readonly hierarchy = undefined;
  /** A count scans all of /proc: 4 ms with 106 processes. */
  readonly countTtlMs = 1_000;
  private readonly markers = new MarkerCache();
  /**
   * The tags of the sessions whose commands carry a marker: a daemon-wide kill or count matches
   * these only (a tag cannot be traced back to its session id, and another daemon's are not ours).
   */
  private readonly knownTags = new Set<string>();

  constructor(
    /** The daemon's token: keys the tags. */
    private readonly secret: string,
    /** Pids never to signal: the daemon's and its spawner processes'. */
    private readonly protectedPids: () => number[],
  ) {}

  env(sessionId: string, unit: string): EnvMap {
    const tag = this.tag(sessionId);
    this.knownTags.add(tag);
    return { [SCOPE_ENV]: `${tag}:${unit}` };
  }

  target(): undefined {
    return undefined;
  }

  members(sessionId: string | undefined, unit?: string): Member[] {
    return readMembers(this.markedPids(sessionId, unit), this.spawners());
  }

  membersBySession(): Map<string, Member[]> {
    const out = new Map<string, Member[]>();
    const spawners = this.spawners();
    this.scan(spawners, (pid, value) => {
      const key = value.slice(0, value.indexOf(':'));
      if (this.knownTags.has(key)) out.set(key, [...(out.get(key) ?? []), ...readMembers([pid], spawners)]);
    });
    return out;
  }

  sessionKey(sessionId: string): string {
    return this.tag(sessionId);
  }

  release(): boolean {
    return true;
  }

  releaseAll(): void {}

  forgetSession(sessionId: string): void {
    this.knownTags.delete(this.tag(sessionId));
  }

  knowLeaders(): void {}

  private spawners(): Set<number> {
    return new Set([process.pid, ...this.protectedPids()]);
  }

  private tag(sessionId: string): string {
    return createHmac('sha256', this.secret).update(`execd-scope:${sessionId}`).digest('hex').slice(0, 32);
  }

  /** Pids whose marker names the session (and unit); of every known session with no id. */
  private markedPids(sessionId: string | undefined, unit?: string): number[] {
    const wanted = sessionId === undefined ? undefined : `${this.tag(sessionId)}:`;
    const pids: number[] = [];
    this.scan(this.spawners(), (pid, value) => {
      if (
        wanted === undefined
          ? this.knownTags.has(value.slice(0, value.indexOf(':')))
          : unit === undefined
            ? value.startsWith(wanted)
            : value === `${wanted}${unit}`
      )
        pids.push(pid);
    });
    return pids;
  }

  /** Calls `found` with every process that carries a marker and its value; forgets the processes gone. */
  private scan(spawners: ReadonlySet<number>, found: (pid: number, value: string) => void): void {
    let names: string[];
    try {
      names = readdirSync('/proc');
    } catch {
      return;
    }
    const seen = new Set<number>();
    for (const name of names) {
      const pid = Number(name);
      if (!Number.isInteger(pid)) continue;
      seen.add(pid);
      const value = this.markers.of(pid, spawners);
      if (value !== undefined) found(pid, value);
    }
    this.markers.keepOnly(seen);
  }
}
