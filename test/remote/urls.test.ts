/** Parsing of listen and daemon URLs, and the one-line reasons of TLS failures. */
import { describe, expect, it } from 'vitest';
import { describeSocketError, parseDaemonUrl } from '../../client/transport-url.js';
import { remoteConnectOptions } from '../../client/cli/remote.js';
import { checkTlsFiles, isLoopbackHost, parseListenUrl } from '../../daemon/net/listeners.js';

describe('parseListenUrl', () => {
  it('takes tls:// on any host and tcp:// on loopback only', () => {
    expect(parseListenUrl('tls://0.0.0.0:7443')).toEqual({ scheme: 'tls', host: '0.0.0.0', port: 7443 });
    expect(parseListenUrl('tls://[::]:7443')).toEqual({ scheme: 'tls', host: '::', port: 7443 });
    expect(parseListenUrl('tcp://127.0.0.1:7000')).toEqual({ scheme: 'tcp', host: '127.0.0.1', port: 7000 });
    expect(parseListenUrl('tcp://[::1]:7000')).toEqual({ scheme: 'tcp', host: '::1', port: 7000 });
    expect(parseListenUrl('tcp://localhost:7000')).toEqual({ scheme: 'tcp', host: 'localhost', port: 7000 });
    expect(parseListenUrl('tcp://10.0.0.1:7000')).toMatch(/only on a loopback address/);
    expect(parseListenUrl('tcp://0.0.0.0:7000')).toMatch(/only on a loopback address/);
    expect(parseListenUrl('tls://host:70000')).toMatch(/at most 65535/);
    expect(parseListenUrl('https://host:1')).toMatch(/must be tls:\/\/HOST:PORT/);
    expect(parseListenUrl('tls://host')).toMatch(/must be tls:\/\/HOST:PORT/);
  });

  it('knows loopback addresses', () => {
    expect(['127.0.0.1', '127.1.2.3', '::1', 'localhost'].every(isLoopbackHost)).toBe(true);
    expect(['10.0.0.1', '0.0.0.0', '::', 'example.com', '127.example.com'].some(isLoopbackHost)).toBe(false);
  });

  it('asks for the TLS material only with a tls:// listener', () => {
    const tls = [{ scheme: 'tls', host: 'h', port: 1 }] as const;
    const tcp = [{ scheme: 'tcp', host: '127.0.0.1', port: 1 }] as const;
    expect(checkTlsFiles(tls, { cert: 'c' })).toMatch(/needs --tls-cert and --tls-key/);
    expect(checkTlsFiles(tls, { cert: 'c', key: 'k' })).toBeUndefined();
    expect(checkTlsFiles(tcp, { clientCa: 'ca' })).toMatch(/apply only to a tls:\/\/ listener/);
    expect(checkTlsFiles([], {})).toBeUndefined();
  });
});

describe('parseDaemonUrl', () => {
  it('takes tls://, tcp:// and unix:// addresses', () => {
    expect(parseDaemonUrl('tls://sandbox-1.example:7443')).toEqual({
      kind: 'tls',
      host: 'sandbox-1.example',
      port: 7443,
      url: 'tls://sandbox-1.example:7443',
    });
    expect(parseDaemonUrl('tcp://[::1]:7000')).toMatchObject({ kind: 'tcp', host: '::1', port: 7000 });
    expect(parseDaemonUrl('unix:///run/execd/execd.sock')).toEqual({ kind: 'unix', path: '/run/execd/execd.sock' });
    for (const bad of ['tls://h:0', 'tls://h', 'http://h:1', 'unix://relative', 'h:1'])
      expect(parseDaemonUrl(bad)).toMatch(/a daemon URL is tls:\/\/HOST:PORT/);
  });

  it("reduces OpenSSL's messages to the alert", () => {
    const error = new Error(
      '80ACC141097F0000:error:0A00045C:SSL routines:ssl3_read_bytes:tlsv13 alert certificate required:../deps/x.c:1601:SSL alert number 116\n',
    );
    expect(describeSocketError(error)).toBe('the daemon refused the TLS session (alert: certificate required)');
    expect(describeSocketError(new Error('connect ECONNREFUSED 10.0.0.2:7443'))).toBe(
      'connect ECONNREFUSED 10.0.0.2:7443',
    );
  });
});

describe('remoteConnectOptions (EXECD_URL and its companions)', () => {
  it('is undefined without EXECD_URL, and checks EXECD_KEEPALIVE_MS', () => {
    expect(remoteConnectOptions({ EXECD_TOKEN: 't' })).toBeUndefined();
    expect(remoteConnectOptions({ EXECD_URL: 'tls://h:1', EXECD_KEEPALIVE_MS: '5000' })).toMatchObject({
      url: 'tls://h:1',
      keepAliveMs: 5000,
      ca: undefined,
    });
    expect(() => remoteConnectOptions({ EXECD_URL: 'tls://h:1', EXECD_KEEPALIVE_MS: '10s' })).toThrow(
      'execd: EXECD_KEEPALIVE_MS must be a number of milliseconds from 100 to 2147483647, got "10s"',
    );
  });
});
