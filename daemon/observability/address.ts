/**
 * The `--metrics` address: `http://HOST:PORT` or `tcp://HOST:PORT` for plain HTTP, `https://HOST:PORT`
 * or `tls://HOST:PORT` for HTTPS with the `--tls-cert`/`--tls-key` pair of the `--listen` listeners.
 * Plain HTTP is allowed on any address, unlike `--listen tcp://` (loopback only): what it serves
 * names no command, path or session, and a kubelet probes the pod's own address.
 */
import { splitAddressUrl } from '../net/listeners.js';

/** One `--metrics` address. */
export interface MetricsSpec {
  tls: boolean;
  host: string;
  port: number;
}

/** Parses a `--metrics` address; returns a reason on refusal. */
export function parseMetricsUrl(raw: string): MetricsSpec | string {
  const split = splitAddressUrl(raw);
  const schemes: Record<string, boolean> = { http: false, tcp: false, https: true, tls: true };
  if (!split || !(split.scheme in schemes))
    return `--metrics must be http://HOST:PORT, https://HOST:PORT, tcp://HOST:PORT or tls://HOST:PORT, got ${JSON.stringify(raw)}`;
  if (split.port > 65_535) return `--metrics port must be at most 65535, got ${split.port}`;
  return { tls: schemes[split.scheme]!, host: split.host, port: split.port };
}
