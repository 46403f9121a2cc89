/**
 * A keyed `shell/run` or `terminal/run` that outlives its connection (docs/reconnect.md): when the
 * connection it answers to closes, it keeps running for `reconnectGraceMs`; a repeat of its key
 * from another connection of the session takes it over (streamed output goes there from then on),
 * and past the grace with no one attached it is cancelled, as a run of a dropped connection always
 * was. A cancellation from any request attached to it cancels it at once.
 */
import { CancellationTokenSource, type CancellationToken } from 'vscode-jsonrpc';
import type { HandlerContext, RunAttachment } from '../net/handler.js';

/** The cancellation and attachment of one detachable run. */
export class DetachableRun {
  private readonly source = new CancellationTokenSource();
  private current: RunAttachment;
  private graceTimer: NodeJS.Timeout | undefined;
  private readonly releases: Array<() => void> = [];
  private finished = false;

  constructor(
    ctx: HandlerContext,
    params: Record<string, unknown>,
    private readonly graceMs: () => number,
  ) {
    this.current = { conn: ctx.conn, params };
    this.follow(ctx);
  }

  /** The token the run is cancelled by: any attached request's cancel, or the grace passing. */
  get token(): CancellationToken {
    return this.source.token;
  }

  /** Who the run answers to now. */
  readonly attached = (): RunAttachment => this.current;

  /** A repeat of the key: `ctx`'s connection is the one the run answers to from now on. */
  adopt(ctx: HandlerContext, params: Record<string, unknown>): void {
    if (this.finished) return;
    clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
    this.current = { conn: ctx.conn, params };
    this.follow(ctx);
  }

  /** The run answered: nothing is watched any more. */
  finish(): void {
    this.finished = true;
    clearTimeout(this.graceTimer);
    for (const release of this.releases.splice(0)) release();
    this.source.dispose();
  }

  private follow(ctx: HandlerContext): void {
    const cancel = ctx.token.onCancellationRequested(() => this.source.cancel());
    this.releases.push(() => cancel.dispose());
    const attachment = this.current;
    this.releases.push(
      ctx.conn.onClose(() => {
        // Only the connection it answers to counts: an older one closing later changes nothing.
        if (this.finished || this.current !== attachment) return;
        const graceMs = this.graceMs();
        if (graceMs === 0) this.source.cancel();
        else this.graceTimer = setTimeout(() => this.source.cancel(), graceMs);
      }),
    );
  }
}
