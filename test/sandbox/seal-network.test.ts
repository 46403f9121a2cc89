/**
 * `network: 'off'` refuses every socket that can reach a network (SPEC §16), under each runner and
 * in the unprivileged condition: MPTCP to a loopback TCP listener and UDP to a loopback datagram
 * listener never arrive (Landlock rules only TCP; its seccomp filter refuses the rest at
 * `socket(2)`, bubblewrap's network namespace has only a loopback that is down).
 */
import { createSocket } from 'node:dgram';
import { mkdirSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { ExecdClient } from '../../client/connection.js';
import { SessionOpen } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { startUnprivilegedDaemon } from '../helpers/unprivileged-daemon.js';

/** A TCP and a UDP listener on loopback, closed when the test finishes. */
async function listeners() {
  let accepted = 0;
  let datagrams = 0;
  const tcp = createServer((socket) => {
    accepted++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  const udp = createSocket('udp4', () => datagrams++);
  await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
  onTestFinished(async () => {
    udp.close();
    await new Promise<void>((resolve) => tcp.close(() => resolve()));
  });
  return {
    tcpPort: (tcp.address() as AddressInfo).port,
    udpPort: udp.address().port,
    accepted: () => accepted,
    datagrams: () => datagrams,
  };
}

/** Tries each kind of socket and says, one line each, `<kind> OK` or `<kind> <errno name>`. */
function socketsCommand(tcpPort: number, udpPort: number): string {
  return `python3 -c '
import errno, socket
def attempt(name, fn):
    try:
        fn()
        print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
def mptcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
    s.settimeout(5)
    s.connect(("127.0.0.1", ${tcpPort}))
    s.close()
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"x", ("127.0.0.1", ${udpPort}))
    s.close()
def tcp6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(("::1", ${tcpPort}))
attempt("mptcp", mptcp)
attempt("udp", udp)
attempt("tcp6", tcp6)
attempt("sctp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132).close())
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, 1).close())
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close())
attempt("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close())
attempt("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
attempt("pair", lambda: [s.close() for s in socket.socketpair()])
'`;
}

/** Parses the command's lines into `{ kind: outcome }`. */
function outcomes(stdout: string): Record<string, string> {
  return Object.fromEntries(
    stdout
      .trim()
      .split('\n')
      .map((line) => line.split(' ') as [string, string]),
  );
}

interface Variant {
  name: string;
  start: () => Promise<{ client: ExecdClient; workspace: string }>;
}

async function rootDaemon(backend: 'bwrap' | 'landlock') {
  const daemon = await startDaemon({ config: { sandboxBackend: backend } });
  const workspace = join(daemon.dir, 'ws');
  mkdirSync(workspace);
  return { client: await daemon.connect(), workspace };
}

const VARIANTS: Variant[] = [
  { name: 'bwrap', start: () => rootDaemon('bwrap') },
  { name: 'landlock', start: () => rootDaemon('landlock') },
  {
    name: 'landlock, unprivileged',
    start: async () => {
      const { daemon, workspace } = await startUnprivilegedDaemon();
      return { client: await daemon.connect(), workspace };
    },
  },
];

describe.each(VARIANTS)("network 'off' under $name", (variant) => {
  it('refuses MPTCP, UDP and every other socket that can reach a network; on, MPTCP and UDP arrive', async () => {
    const { client, workspace } = await variant.start();
    const landlock = variant.name.startsWith('landlock');
    expect(client.info.capabilities.sandbox.backend).toBe(landlock ? 'landlock' : 'bwrap');
    await client.call(SessionOpen, { sessionId: 's1', cwd: workspace, sandbox: { mode: 'workspace-write' } });
    const listening = await listeners();
    const command = socketsCommand(listening.tcpPort, listening.udpPort);

    const on = await client.run({ sessionId: 's1', command });
    const open = outcomes(on.stdout.text);
    console.log(`${variant.name} network on: ${JSON.stringify(open)}`);
    expect(open).toMatchObject({ mptcp: 'OK', udp: 'OK', pair: 'OK' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(listening.accepted()).toBe(1);
    expect(listening.datagrams()).toBe(1);

    const off = await client.run({
      sessionId: 's1',
      command,
      sandboxPolicy: { mode: 'workspace-write', network: 'off' },
    });
    const closed = outcomes(off.stdout.text);
    console.log(`${variant.name} network off: ${JSON.stringify(closed)}`);
    if (landlock) {
      // Refused at socket(2), whatever the family and protocol; a socket pair reaches only itself.
      expect(closed).toEqual({
        mptcp: 'EACCES',
        udp: 'EACCES',
        tcp6: 'EACCES',
        sctp: 'EACCES',
        raw: 'EACCES',
        packet: 'EACCES',
        netlink: 'EACCES',
        unix: 'EACCES',
        pair: 'OK',
      });
    } else {
      // A network namespace of its own: sockets exist, nothing leaves it.
      expect(closed.mptcp).not.toBe('OK');
      expect(closed.tcp6).not.toBe('OK');
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(listening.accepted()).toBe(1);
    expect(listening.datagrams()).toBe(1);
  });
});
