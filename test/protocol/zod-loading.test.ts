/**
 * zod is loaded only to validate, and only one copy of it (see protocol/zod.ts): a client that
 * imports the protocol and the client library never loads it, and every module that validates
 * reaches it through the same CommonJS require — never through an ESM import, which would be a
 * second copy whose schemas and errors do not mix with the first.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DIST_URL, traceScript, zodFiles } from '../helpers/loaded-modules.js';

const DIST = join(import.meta.dirname, '..', '..', 'dist');

/**
 * Every built module of execd but the entry scripts (the CLI's, and the Landlock launcher's, which
 * run when imported) and the MCP
 * server: `@modelcontextprotocol/sdk` imports its own zod as ESM for its own message schemas, which
 * never meet execd's, so `execd mcp` alone holds a second copy.
 */
const MCP_MODULES = [
  'client/mcp/server.js',
  'client/mcp/framing.js',
  'client/mcp/stdio-transport.js',
  'client/mcp/refuse-start.js',
  'client/cli/mcp.js',
];
const ENTRY_SCRIPTS = ['client/cli/main.js', 'daemon/sandbox/landlock-launcher.js'];
function allModules(): string[] {
  return ['protocol', 'daemon', 'spill', 'client']
    .flatMap((dir) =>
      readdirSync(join(DIST, dir), { recursive: true, encoding: 'utf8' }).map((file) => `${dir}/${file}`),
    )
    .filter((file) => file.endsWith('.js') && !ENTRY_SCRIPTS.includes(file) && !MCP_MODULES.includes(file))
    .sort();
}

describe('loading zod', { timeout: 60_000 }, () => {
  it('importing the protocol and the client library, and naming methods, does not load zod', async () => {
    const traced = await traceScript(`
      const protocol = await import('${DIST_URL}/protocol/index.js');
      await import('${DIST_URL}/client/connection.js');
      await import('${DIST_URL}/shared/render.js');
      await import('${DIST_URL}/client/cli/run.js');
      console.log(JSON.stringify(protocol.ALL_REQUESTS.map((decl) => decl.type.method)));
    `);
    expect(traced.stderr).toBe('');
    expect(traced.code).toBe(0);
    expect(JSON.parse(traced.stdout)).toContain('shell/run');
    // The tracer saw the modules, so an empty zod list means zod was not there.
    expect(traced.esm).toContain(`${DIST_URL}/protocol/methods.js`);
    expect(traced.cjs.some((url) => url.includes('/node_modules/vscode-jsonrpc/'))).toBe(true);
    expect(zodFiles([...traced.esm, ...traced.cjs])).toEqual([]);
  });

  it('validation loads zod on first use, one copy through require, shared by every module', async () => {
    const modules = allModules();
    expect(modules).toContain('client/tool/args.js');
    const traced = await traceScript(`
      for (const file of ${JSON.stringify(modules)}) await import('${DIST_URL}/' + file);
      const { ALL_REQUESTS, ShellRun } = await import('${DIST_URL}/protocol/methods.js');
      const { formatZodError } = await import('${DIST_URL}/protocol/fields.js');
      const { configPatchSchema } = await import('${DIST_URL}/protocol/config.js');
      const { validateShellArgs } = await import('${DIST_URL}/client/tool/args.js');
      const schemas = ALL_REQUESTS.map((decl) => decl.params);
      const bad = ShellRun.params.safeParse({ sessionId: 's', command: '' });
      console.log(JSON.stringify({
        good: ShellRun.params.safeParse({ sessionId: 's', command: 'true' }).success,
        bad: formatZodError(bad.error),
        kept: ALL_REQUESTS.every((decl, index) => decl.params === schemas[index]),
        config: formatZodError(configPatchSchema().safeParse({ graceMs: 0 }).error),
        tool: validateShellArgs({ command: 'ls', description: 42 }, { background: false, escalation: false }),
      }));
    `);
    expect(traced.stderr).toBe('');
    expect(traced.code).toBe(0);
    expect(JSON.parse(traced.stdout)).toEqual({
      good: true,
      bad: 'command must be a non-empty string',
      kept: true,
      config: 'graceMs must be a positive finite number',
      tool: { ok: false, message: 'invalid description: expected a non-empty string' },
    });
    expect(traced.esm).toContain(`${DIST_URL}/daemon/server.js`);
    expect(zodFiles(traced.esm)).toEqual([]);
    const required = zodFiles(traced.cjs);
    expect(required.filter((url) => url.endsWith('/node_modules/zod/index.cjs'))).toHaveLength(1);
    expect(required.filter((url) => !url.endsWith('.cjs') && !url.endsWith('.json'))).toEqual([]);
  });
});
