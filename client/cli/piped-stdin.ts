/** The caller's stdin for `execd run`: forwarded when it is a pipe or a file, never a terminal. */

/** What reading stdin gave: the text (undefined for none), or that it passed the limit. */
export type PipedStdin = { text: string | undefined } | { tooLarge: true };

/** True when stdin is a terminal (never read) or cannot be looked at (closed). */
export function stdinIsTerminal(): boolean {
  try {
    return process.stdin.isTTY === true;
  } catch {
    return true;
  }
}

/**
 * Reads stdin to its end when it is not a terminal (`echo piped | execd run -- cat`); `text` is
 * undefined for a terminal, an empty input, or a stdin that cannot be read. Stops as soon as more
 * than `limitBytes` arrived (`yes | execd run -- head -1` would never end) and closes stdin, so the
 * writer gets SIGPIPE instead of filling memory.
 */
export async function readPipedStdin(limitBytes: number): Promise<PipedStdin> {
  if (stdinIsTerminal()) return { text: undefined };
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of process.stdin) {
      chunks.push(chunk as Buffer);
      bytes += (chunk as Buffer).length;
      if (bytes > limitBytes) {
        process.stdin.destroy();
        return { tooLarge: true };
      }
    }
  } catch {
    return { text: undefined };
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return { text: text.length > 0 ? text : undefined };
}
