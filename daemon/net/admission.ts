/**
 * Who may take a connection slot from a network listener (`tls://`, `tcp://`). Network peers that
 * have not authenticated yet (in their TLS handshake or before `initialize`) share a budget of
 * their own, `maxPreAuthConnections`, with at most `maxPreAuthPerAddress` from one address; a
 * newcomer past either bound evicts the oldest stranger of the address holding the most, so a flood
 * of silent connections cannot lock an honest client out (it costs each stranger its slot sooner).
 * All network connections together stay `localConnectionReserve` below `maxConnections`: the
 * local socket always has room.
 */
import type { Socket } from 'node:net';

/** The bounds, read at each admission so `config/set` applies. */
export interface AdmissionLimits {
  maxConnections: number;
  maxPreAuthConnections: number;
  maxPreAuthPerAddress: number;
  localConnectionReserve: number;
}

/** A network peer as the admission sees it. */
interface Peer {
  socket: Socket;
  address: string;
  /** Set once the daemon's connection exists: tells whether it authenticated. */
  connection: { readonly authed: boolean } | undefined;
}

/** What an admission did, for the caller to log (aggregated: strangers must not fill the log). */
export type AdmissionOutcome = { admitted: true; evicted?: string } | { admitted: false; reason: string };

/** The network peers of all listeners of a daemon. */
export class NetworkAdmission {
  /** In arrival order: the first stranger of an address is its oldest. */
  private readonly peers = new Set<Peer>();
  private readonly bySocket = new WeakMap<Socket, Peer>();

  constructor(private readonly limits: () => AdmissionLimits) {}

  private strangers(): Peer[] {
    return [...this.peers].filter((peer) => !peer.connection?.authed);
  }

  /** Admits a raw socket just accepted, evicting a stranger if the budget requires; false: destroyed. */
  admit(socket: Socket): AdmissionOutcome {
    const limits = this.limits();
    const address = socket.remoteAddress ?? 'unknown';
    const networkCap = Math.max(1, limits.maxConnections - limits.localConnectionReserve);
    let evicted: string | undefined;
    const strangers = this.strangers();
    const sameAddress = strangers.filter((peer) => peer.address === address);
    if (sameAddress.length >= limits.maxPreAuthPerAddress) evicted = this.evict(sameAddress[0]!);
    else if (strangers.length >= limits.maxPreAuthConnections) evicted = this.evict(oldestOfBusiest(strangers));
    else if (this.peers.size >= networkCap && strangers.length > 0) evicted = this.evict(oldestOfBusiest(strangers));
    if (this.peers.size >= networkCap) {
      socket.destroy();
      return {
        admitted: false,
        reason: `network connections at maxConnections less localConnectionReserve (${networkCap})`,
      };
    }
    const peer: Peer = { socket, address, connection: undefined };
    this.peers.add(peer);
    this.bySocket.set(socket, peer);
    socket.once('close', () => this.peers.delete(peer));
    return evicted === undefined ? { admitted: true } : { admitted: true, evicted };
  }

  /** The daemon's connection over an admitted socket (its TLS socket's raw one, for TLS). */
  attach(raw: Socket, connection: { readonly authed: boolean } | undefined): void {
    const peer = this.bySocket.get(raw);
    if (peer) peer.connection = connection;
  }

  /** Network peers now, and how many of them have not authenticated. */
  counts(): { peers: number; strangers: number } {
    return { peers: this.peers.size, strangers: this.strangers().length };
  }

  private evict(peer: Peer): string {
    this.peers.delete(peer);
    peer.socket.destroy();
    return peer.address;
  }
}

/** The oldest stranger of the address holding the most strangers (pure). */
function oldestOfBusiest(strangers: Peer[]): Peer {
  const counts = new Map<string, number>();
  for (const peer of strangers) counts.set(peer.address, (counts.get(peer.address) ?? 0) + 1);
  let busiest = strangers[0]!.address;
  for (const [address, count] of counts) if (count > counts.get(busiest)!) busiest = address;
  return strangers.find((peer) => peer.address === busiest)!;
}
