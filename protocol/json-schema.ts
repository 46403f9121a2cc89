/**
 * One JSON Schema document of the whole protocol (PROTOCOL.md), generated from the zod declarations:
 * every method's params and result and every notification's params. `execd schema` prints it, so
 * a client in any language can generate or check its types without reading TypeScript.
 */
import type { z } from 'zod';
import { ALL_REQUESTS } from './methods.js';
import { NOTIFICATION_SCHEMAS, resultSchema } from './results.js';
import { PROTOCOL_VERSION } from './types.js';
import { zod } from './zod.js';

/** The document `execd schema` prints. */
export interface ProtocolSchemaDocument {
  $schema: string;
  title: string;
  protocolVersion: number;
  methods: Record<string, { params: unknown; result: unknown }>;
  notifications: Record<string, { params: unknown }>;
}

/** Builds the JSON Schema document of every method and notification. */
export function protocolJsonSchema(): ProtocolSchemaDocument {
  const z = zod();
  // Refinements and transforms (e.g. "no NUL bytes") have no JSON Schema form: the shape is kept.
  const json = (schema: z.ZodType, io: 'input' | 'output') => {
    const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
    return rest;
  };
  const methods: ProtocolSchemaDocument['methods'] = {};
  for (const decl of ALL_REQUESTS) {
    const result = resultSchema(decl.method);
    methods[decl.method] = { params: json(decl.params, 'input'), result: result ? json(result, 'output') : {} };
  }
  const notifications: ProtocolSchemaDocument['notifications'] = {};
  for (const [method, build] of Object.entries(NOTIFICATION_SCHEMAS))
    notifications[method] = { params: json(build(z), 'output') };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'execd JSON-RPC protocol',
    protocolVersion: PROTOCOL_VERSION,
    methods,
    notifications,
  };
}
