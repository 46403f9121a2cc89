/**
 * The Prometheus metrics (docs/observability.md), on `prom-client`'s own registry. This module is the only one
 * that imports prom-client, and it is loaded (`import()`) only when `--metrics` is given: a daemon
 * without the listener never reads the library (test/observability/loading.test.ts).
 *
 * Counters and histograms are fed by the observer; the gauges read the daemon when scraped, so a
 * session opened or a job settled costs nothing here. No label carries a session id, path or
 * command: `kind`, `mode`, `result`, `transport`, `direction` and `helper` are closed lists, and
 * `method` and `code` come from the protocol's closed lists of methods and error names.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CommandEnd, CommandStart, DaemonObserver, PeerIdentity } from './observer.js';

/** What the gauges read from the daemon at each scrape. */
export interface GaugeSource {
  sessions(): number;
  jobsRunning(): number;
  terminalsOpen(): number;
  /** Open client connections by transport. */
  connections(): Record<PeerIdentity['transport'], number>;
  /** Spill and log bytes on disk as of the last retention sweep. */
  spillBytes(): number;
  /** Helper processes alive now, by helper. */
  helperProcesses(): Record<string, number>;
}

/** Seconds: from a 1 ms `true` to a half-hour build. */
const COMMAND_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];
/** Seconds: a warm spawn takes ~1–5 ms, a cold sandbox runner tens. */
const SPAWN_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** The registry, its observer, and the text a scrape answers. */
export interface DaemonMetrics {
  observer: DaemonObserver;
  /** Where the gauges read from, once the daemon exists. */
  attach: (source: GaugeSource) => void;
  /** The Prometheus text exposition. */
  render: () => Promise<string>;
  readonly contentType: string;
}

/** Builds the registry with every execd metric and Node's default process metrics. */
export function createDaemonMetrics(): DaemonMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  let source: GaugeSource | undefined;
  const registers = [registry];

  const commands = new Counter({
    name: 'execd_commands_total',
    help: 'Commands ended, by kind (run, job, terminal_run), sandbox mode and result.',
    labelNames: ['kind', 'mode', 'result'] as const,
    registers,
  });
  const commandSeconds = new Histogram({
    name: 'execd_command_duration_seconds',
    help: 'How long commands ran, from start to end, by kind and sandbox mode.',
    labelNames: ['kind', 'mode'] as const,
    buckets: COMMAND_BUCKETS,
    registers,
  });
  const spawnSeconds = new Histogram({
    name: 'execd_spawn_duration_seconds',
    help: 'From the request to the child running, for runs and jobs.',
    labelNames: ['kind'] as const,
    buckets: SPAWN_BUCKETS,
    registers,
  });
  const requests = new Counter({
    name: 'execd_requests_total',
    help: 'Requests answered, by method and code (ok or the error name).',
    labelNames: ['method', 'code'] as const,
    registers,
  });
  const fsBytes = new Counter({
    name: 'execd_fs_bytes_total',
    help: 'Bytes read from and written to files through the file API.',
    labelNames: ['direction'] as const,
    registers,
  });
  const denials = new Counter({
    name: 'execd_sandbox_denials_total',
    help: 'Commands the sandbox denied a write, by sandbox mode.',
    labelNames: ['mode'] as const,
    registers,
  });
  const gauge = (name: string, help: string, read: (source: GaugeSource) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(source ? read(source) : 0);
      },
    });
  gauge('execd_sessions', 'Sessions open.', (s) => s.sessions());
  gauge('execd_jobs_running', 'Background jobs holding a process.', (s) => s.jobsRunning());
  gauge('execd_terminals_open', 'Terminals whose program runs.', (s) => s.terminalsOpen());
  gauge('execd_spill_bytes', 'Spill and log bytes on disk as of the last retention sweep.', (s) => s.spillBytes());
  new Gauge({
    name: 'execd_connections',
    help: 'Client connections open, by transport.',
    labelNames: ['transport'] as const,
    registers,
    collect() {
      for (const [transport, count] of Object.entries(source?.connections() ?? { unix: 0, tcp: 0, tls: 0 }))
        this.set({ transport }, count);
    },
  });
  new Gauge({
    name: 'execd_helper_processes',
    help: 'Helper processes alive, by helper.',
    labelNames: ['helper'] as const,
    registers,
    collect() {
      for (const [helper, count] of Object.entries(source?.helperProcesses() ?? {})) this.set({ helper }, count);
    },
  });

  const observer: DaemonObserver = {
    active: true,
    command(start: CommandStart) {
      const requested = performance.now();
      let done = false;
      let spawned = false;
      return {
        running: () => {
          if (spawned || start.kind === 'terminal_run') return;
          spawned = true;
          spawnSeconds.observe({ kind: start.kind }, (performance.now() - requested) / 1000);
        },
        ended: (end: CommandEnd) => {
          if (done) return;
          done = true;
          commands.inc({ kind: start.kind, mode: start.mode, result: end.result });
          commandSeconds.observe({ kind: start.kind, mode: start.mode }, end.durationMs / 1000);
          if (end.denied) denials.inc({ mode: start.mode });
        },
      };
    },
    request: (method, code) => requests.inc({ method, code }),
    fsBytes: (direction, bytes) => fsBytes.inc({ direction }, bytes),
  };
  return {
    observer,
    attach: (given) => {
      source = given;
    },
    render: () => registry.metrics(),
    contentType: registry.contentType,
  };
}
