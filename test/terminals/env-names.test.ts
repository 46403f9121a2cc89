/**
 * `env` names are checked where they are declared: keys of `session/open`, `session/update`,
 * `terminal/open` and `shell/*` that are not variable names are INVALID_PARAMS naming the key, and
 * nothing is started with them (`FOO=BAR: baz` once reached the shell as `FOO=BAR=baz`).
 */
import { describe, expect, test } from 'vitest';
import {
  SessionOpen,
  SessionUpdate,
  ShellResolve,
  ShellRun,
  ShellStart,
  TerminalList,
  TerminalOpen,
} from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { rejection } from '../helpers/rejection.js';

const BAD_NAMES = ['FOO=BAR', 'INVALID-NAME', '', '1ST', 'A B'];

describe('env names', () => {
  test('every method taking env refuses a key that is not a variable name, naming the key', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const sessionId = 's1';
    const calls: Array<[string, (env: Record<string, string>) => Promise<unknown>]> = [
      ['session/open', (env) => client.call(SessionOpen, { sessionId: 's2', cwd: daemon.dir, env })],
      ['session/update', (env) => client.call(SessionUpdate, { sessionId, env })],
      ['terminal/open', (env) => client.call(TerminalOpen, { sessionId, env })],
      ['shell/run', (env) => client.call(ShellRun, { sessionId, command: 'env', env })],
      ['shell/start', (env) => client.call(ShellStart, { sessionId, command: 'env', env })],
      ['shell/resolve', (env) => client.call(ShellResolve, { sessionId, command: 'env', env })],
      ['dshEnv', (env) => client.call(ShellRun, { sessionId, command: 'env', dshEnv: { DSH_OK: 'x' }, env })],
    ];
    for (const [method, call] of calls) {
      for (const name of BAD_NAMES) {
        const error = await rejection(call({ OK: 'fine', [name]: 'baz' }));
        expect(error.errorName, `${method} ${JSON.stringify(name)}`).toBe('INVALID_PARAMS');
        expect(error.message, method).toContain(`env keys must be variable names`);
        expect(error.message, method).toContain(JSON.stringify(name));
      }
    }
    // Nothing was opened with a refused environment.
    expect(await client.call(TerminalList, { sessionId })).toEqual([]);
    // Valid names pass, the underscore and digits after the first character too.
    const run = await client.run({ sessionId, command: 'echo "$_A1 $b_2"', env: { _A1: 'x', b_2: 'y' } });
    expect(run.stdout.text).toBe('x y\n');
  });
});
