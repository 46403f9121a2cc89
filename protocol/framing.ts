/**
 * vscode-jsonrpc's base-protocol framing (`Content-Length` header, blank line, UTF-8 JSON body),
 * built as one string so that each message is a single socket write — one syscall instead of two.
 */
import type { Message } from 'vscode-jsonrpc';

/** The framed bytes of one message, as a UTF-8 string. */
export function frameMessage(message: Message): string {
  const body = JSON.stringify(message);
  return `Content-Length: ${Buffer.byteLength(body, 'utf8')}\r\n\r\n${body}`;
}
