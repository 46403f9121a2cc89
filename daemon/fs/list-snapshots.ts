/**
 * What a paged `fs/list` keeps between its pages (docs/files.md#list): the sorted names of each
 * directory it read, taken once, so a later page skips to its cursor by binary search and costs in
 * proportion to the page instead of reading and sorting the whole directory again.
 *
 * A listing is one session's walk of one real directory to one depth; its first page (no cursor)
 * starts a fresh snapshot, and the pages after it use that one. Bounded: a snapshot unused for
 * `LIST_SNAPSHOT_IDLE_MS` is dropped; a session keeps at most `MAX_LIST_SNAPSHOTS_PER_SESSION` of
 * them and `MAX_LIST_SNAPSHOT_BYTES_PER_SESSION` of names, the daemon `MAX_LIST_SNAPSHOT_BYTES`,
 * the least recently used dropped first; a directory whose names alone pass the session's bound is
 * not kept. A page whose snapshot is gone reads the directory again, as a first page does, and
 * continues after the cursor's path: a dropped snapshot costs time, never correctness.
 */

/** How long a listing's snapshot is kept after its last page. */
export const LIST_SNAPSHOT_IDLE_MS = 60_000;
/** Listings one session keeps snapshots of at once. */
export const MAX_LIST_SNAPSHOTS_PER_SESSION = 8;
/** Estimated bytes of names one session's snapshots hold together. */
export const MAX_LIST_SNAPSHOT_BYTES_PER_SESSION = 32 * 1024 * 1024;
/** Estimated bytes of names every session's snapshots hold together. */
export const MAX_LIST_SNAPSHOT_BYTES = 128 * 1024 * 1024;

/** What one name costs besides its characters (the string's header, the array slot, the flag). */
const PER_NAME_BYTES = 48;

/** One directory's entries as it was read: names sorted, and which are directories. */
export interface DirNames {
  names: readonly string[];
  /** 1 where `names[i]` was a directory when read. */
  dirs: Uint8Array;
  /** The directory's identity when read: a snapshot is used only for the same directory. */
  dev: bigint;
  ino: bigint;
}

/** The directories one listing has read so far, by path relative to its root ('' for the root). */
export class ListingSnapshot {
  private readonly dirs = new Map<string, DirNames>();
  /** Estimated bytes of the names held. */
  bytes = 0;
  usedAt = Date.now();

  constructor(
    readonly key: string,
    readonly sessionId: string,
    private readonly store: ListSnapshots,
  ) {}

  /** The names read earlier of the directory at `rel`, if it is still the same directory. */
  get(rel: string, id: { dev: bigint; ino: bigint }): DirNames | undefined {
    const held = this.dirs.get(rel);
    return held && held.dev === id.dev && held.ino === id.ino ? held : undefined;
  }

  /** Keeps the names of the directory at `rel`, when the bounds leave room for them. */
  keep(rel: string, names: DirNames): void {
    if (this.dirs.has(rel)) return;
    let bytes = 0;
    for (const name of names.names) bytes += name.length * 2 + PER_NAME_BYTES;
    if (!this.store.admit(this, bytes)) return;
    this.dirs.set(rel, names);
    this.bytes += bytes;
  }
}

/** Every listing snapshot of one daemon, least recently used first. */
export class ListSnapshots {
  private readonly listings = new Map<string, ListingSnapshot>();
  private totalBytes = 0;
  private timer: NodeJS.Timeout | undefined;

  /** The snapshot of a listing's page; `fresh` (a first page) drops what an earlier listing kept. */
  open(sessionId: string, real: string, depth: number, fresh: boolean, now = Date.now()): ListingSnapshot {
    this.expire(now);
    const key = `${sessionId}\0${depth}\0${real}`;
    let listing = this.listings.get(key);
    if (listing && fresh) {
      this.remove(listing);
      listing = undefined;
    }
    if (listing) this.listings.delete(key);
    else {
      listing = new ListingSnapshot(key, sessionId, this);
      const own = [...this.listings.values()].filter((other) => other.sessionId === sessionId);
      for (const oldest of own.slice(0, Math.max(0, own.length - MAX_LIST_SNAPSHOTS_PER_SESSION + 1)))
        this.remove(oldest);
    }
    listing.usedAt = now;
    // Re-entered last: the map's order is the order of last use.
    this.listings.set(key, listing);
    this.schedule();
    return listing;
  }

  /**
   * Makes room for `bytes` more names in `listing`, dropping other listings least recently used
   * first (the session's own for its bound, anyone's for the daemon's); false when it cannot.
   */
  admit(listing: ListingSnapshot, bytes: number): boolean {
    if (!this.listings.has(listing.key) || bytes + listing.bytes > MAX_LIST_SNAPSHOT_BYTES_PER_SESSION) return false;
    const sessionBytes = () => {
      let sum = 0;
      for (const other of this.listings.values()) if (other.sessionId === listing.sessionId) sum += other.bytes;
      return sum;
    };
    while (sessionBytes() + bytes > MAX_LIST_SNAPSHOT_BYTES_PER_SESSION) {
      const victim = [...this.listings.values()].find(
        (other) => other !== listing && other.sessionId === listing.sessionId,
      );
      if (!victim) return false;
      this.remove(victim);
    }
    while (this.totalBytes + bytes > MAX_LIST_SNAPSHOT_BYTES) {
      const victim = [...this.listings.values()].find((other) => other !== listing);
      if (!victim) return false;
      this.remove(victim);
    }
    this.totalBytes += bytes;
    return true;
  }

  /** Drops every snapshot of a session (it closed). */
  forgetSession(sessionId: string): void {
    for (const listing of [...this.listings.values()]) if (listing.sessionId === sessionId) this.remove(listing);
  }

  /** Drops every snapshot (shutdown). */
  clear(): void {
    for (const listing of [...this.listings.values()]) this.remove(listing);
  }

  /** Snapshots held, and their estimated bytes (for tests). */
  get usage(): { listings: number; bytes: number } {
    return { listings: this.listings.size, bytes: this.totalBytes };
  }

  private remove(listing: ListingSnapshot): void {
    if (this.listings.get(listing.key) !== listing) return;
    this.listings.delete(listing.key);
    this.totalBytes -= listing.bytes;
    if (this.listings.size === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private expire(now: number): void {
    for (const listing of [...this.listings.values()])
      if (now - listing.usedAt >= LIST_SNAPSHOT_IDLE_MS) this.remove(listing);
  }

  /** One timer, at the next expiry, while any snapshot is held. */
  private schedule(): void {
    clearTimeout(this.timer);
    const oldest = this.listings.values().next().value;
    if (!oldest) {
      this.timer = undefined;
      return;
    }
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.expire(Date.now());
        this.schedule();
      },
      Math.max(0, oldest.usedAt + LIST_SNAPSHOT_IDLE_MS - Date.now()),
    );
    // Never what keeps the daemon alive.
    this.timer.unref();
  }
}
