/** The caller's stdin for `execd run`: forwarded when it is a pipe or a file, never a terminal. */
import { fstatSync } from 'node:fs';

/**
 * True when stdin is a pipe, a socket or a file: what is forwarded. A terminal, a character device
 * such as /dev/null (a process started with its stdin ignored) or a closed stdin is not read.
 */
export function stdinHasInput(): boolean {
  try {
    const stat = fstatSync(0);
    return stat.isFIFO() || stat.isSocket() || stat.isFile();
  } catch {
    return false;
  }
}
