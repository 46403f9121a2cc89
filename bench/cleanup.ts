/**
 * What the bench started (daemons, temp dirs, children) is undone on every exit path: normal end,
 * an exception, Ctrl-C, SIGTERM. Each resource registers a synchronous undo here.
 */

const undos = new Set<() => void>();
let installed = false;

/** Runs every registered undo once, newest first; an undo that throws does not stop the others. */
export function runCleanups(): void {
  for (const undo of [...undos].reverse()) {
    undos.delete(undo);
    try {
      undo();
    } catch {
      // Best effort: the rest must still run.
    }
  }
}

/** Registers a synchronous undo; returns a function that unregisters it (the resource is gone). */
export function onCleanup(undo: () => void): () => void {
  if (!installed) {
    installed = true;
    process.once('exit', runCleanups);
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.once(signal, () => {
        runCleanups();
        process.exit(128 + ({ SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as const)[signal]);
      });
    }
  }
  undos.add(undo);
  return () => undos.delete(undo);
}
