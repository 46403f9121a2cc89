/** One writer at a time per real path, so `ifMatch` and the replace it guards are one step. */
const tails = new Map<string, Promise<void>>();

/** Runs `action` once every earlier holder of `key` is done. */
export async function withPathLock<T>(key: string, action: () => Promise<T>): Promise<T> {
  const before = tails.get(key) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const tail = before.then(() => mine);
  tails.set(key, tail);
  await before;
  try {
    return await action();
  } finally {
    release();
    if (tails.get(key) === tail) tails.delete(key);
  }
}
