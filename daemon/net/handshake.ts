/**
 * Why an `initialize` that did not parse is refused, named (PROTOCOL.md): a protocol version the
 * daemon does not speak is its own error with the versions it does; anything else names the field.
 */
import type { z } from 'zod';
import { ExecdError } from '../../protocol/errors.js';
import { formatZodError } from '../../protocol/fields.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '../../protocol/types.js';

/** The refusal of an `initialize` whose params failed `error`; `raw` is what the peer sent. */
export function handshakeRefusal(raw: unknown, error: z.ZodError): ExecdError {
  const version = (raw as { protocolVersion?: unknown } | null | undefined)?.protocolVersion;
  if (typeof version === 'number' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    return new ExecdError(
      'PROTOCOL_VERSION_MISMATCH',
      `protocolVersion ${version} is not spoken by this daemon; it speaks ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
    );
  }
  return new ExecdError('UNAUTHORIZED', `initialize refused: ${formatZodError(error)}`);
}
