/**
 * `render/result` and `render/jobRead`: the model's text of a result, rendered by the same code as
 * the TypeScript tools (`client/render.ts`), so a harness in another language shows the model the
 * same bytes. Pure: no session, no process.
 */
import { escalationHintLine, renderProcessRead, renderResult, type RenderOptions } from '../../shared/render.js';
import { RenderJobRead, RenderResult } from '../../protocol/methods.js';
import type { SandboxMode } from '../../protocol/sandbox.js';
import { handler } from '../net/handler.js';

function optionsOf(targets: SandboxMode[] | undefined): RenderOptions {
  return targets && targets.length > 0 ? { escalationHint: escalationHintLine(targets) } : {};
}

/** Handlers of the rendering methods. */
export const renderHandlers = [
  handler(RenderResult, (params) => ({ text: renderResult(params.result, optionsOf(params.escalationTargets)) })),
  handler(RenderJobRead, (params) => ({ text: renderProcessRead(params.read, optionsOf(params.escalationTargets)) })),
];
