/** The gauges' readings of a daemon, taken at each scrape (nothing is counted on the hot paths). */
import type { Socket } from 'node:net';
import type { DaemonContext } from '../context.js';
import { peerOf } from './command-watch.js';
import type { GaugeSource } from './metrics.js';

/** Reads `context` and the open connections for the gauges. */
export function daemonGauges(context: DaemonContext, connections: () => Iterable<{ socket: Socket }>): GaugeSource {
  return {
    sessions: () => context.sessions.all().length,
    jobsRunning: () => context.jobs.list().filter((job) => job.isLive).length,
    terminalsOpen: () => context.terminals.counts().running,
    connections: () => {
      const counts = { unix: 0, tcp: 0, tls: 0 };
      for (const conn of connections()) counts[peerOf(conn.socket).transport] += 1;
      return counts;
    },
    spillBytes: () => context.spill.usedBytes,
    helperProcesses: () => ({ spawner: context.spawner.pids().length }),
  };
}
