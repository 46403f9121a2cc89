/** The caller's stdin for `execd run`: forwarded when it is a pipe or a file, never a terminal. */

/**
 * Reads stdin to its end when it is not a terminal (`echo piped | execd run -- cat`); undefined
 * for a terminal, an empty input, or a stdin that cannot be read (closed).
 */
export async function readPipedStdin(): Promise<string | undefined> {
  try {
    if (process.stdin.isTTY) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text.length > 0 ? text : undefined;
  } catch {
    return undefined;
  }
}
