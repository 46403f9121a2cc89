/**
 * What watches a daemon from outside (docs/observability.md), assembled: the observability listener and its
 * metrics (`--metrics`), the audit log (`--audit-log`), one observer for both. server.ts loads this
 * module only when one of the two flags is given, and the metrics (prom-client) only with `--metrics`.
 */
import type { Socket } from 'node:net';
import type { DaemonContext } from '../context.js';
import type { TlsFiles } from '../net/listeners.js';
import type { MetricsSpec } from './address.js';
import { openAuditLog, type AuditLog } from './audit-log.js';
import { openObservabilityListener, type ObservabilityListener } from './http-listener.js';
import { daemonGauges } from './gauges.js';
import type { GaugeSource } from './metrics.js';
import { combineObservers, type DaemonObserver } from './observer.js';

/** What to open. */
export interface ObservabilityOptions {
  metrics?: MetricsSpec;
  auditLog?: string;
  tls?: TlsFiles;
}

/** What the daemon tells the listener once it answers on its socket. */
export interface ObservedDaemon {
  context: DaemonContext;
  /** The open client connections. */
  connections: () => Iterable<{ socket: Socket }>;
  /** Why the daemon is not ready now; undefined when it is. */
  notReady: () => string | undefined;
}

/** The open observability of one daemon. */
export interface Observability {
  observer: DaemonObserver;
  /** The listener's address, with `--metrics`. */
  url?: string;
  /** Connects the listener and the audit log to the daemon (before: `/readyz` answers 503 starting). */
  attach(daemon: ObservedDaemon): void;
  /** Closes the listener and the audit log. */
  close(): void;
}

/** Opens what the options ask for, all or nothing; rejects with a one-line reason. */
export async function openObservability(options: ObservabilityOptions): Promise<Observability> {
  let daemon: ObservedDaemon | undefined;
  let audit: AuditLog | undefined;
  let listener: ObservabilityListener | undefined;
  let gaugesTo: ((gauges: GaugeSource) => void) | undefined;
  const observers: DaemonObserver[] = [];
  try {
    if (options.auditLog !== undefined) {
      audit = openAuditLog(options.auditLog);
      observers.push(audit.observer);
    }
    if (options.metrics) {
      // The one import of prom-client, here and only here.
      const { createDaemonMetrics } = await import('./metrics.js');
      const metrics = createDaemonMetrics();
      observers.push(metrics.observer);
      gaugesTo = metrics.attach;
      listener = await openObservabilityListener(options.metrics, options.tls ?? {}, {
        notReady: () => (daemon ? daemon.notReady() : 'starting: the daemon does not answer on its socket yet'),
        metrics: async () => ({ text: await metrics.render(), contentType: metrics.contentType }),
      });
    }
  } catch (error) {
    audit?.close();
    throw error;
  }
  return {
    observer: combineObservers(observers),
    ...(listener && { url: listener.url }),
    attach: (given) => {
      daemon = given;
      gaugesTo?.(daemonGauges(given.context, () => given.connections()));
      // The daemon log's bounds: `config/set` of logMaxBytes or logMaxFiles applies to both.
      audit?.bound(() => given.context.config.get());
    },
    close: () => {
      listener?.close();
      audit?.close();
    },
  };
}
