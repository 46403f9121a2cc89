/** resolve() and the environment merge, as pure functions. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../protocol/config.js';
import { buildEnv, maskEnv, scrubEnv, withVariables, type EnvMap } from '../../daemon/runs/env.js';
import { resolveSpec, type ResolveContext } from '../../daemon/runs/resolve.js';

const ctx = (over: Partial<ResolveContext> = {}): ResolveContext => ({
  session: { id: 's1', cwd: '/work/s1' },
  config: DEFAULT_CONFIG,
  daemonCwd: '/daemon',
  baseEnv: { PATH: '/bin' },
  shellArgv: (command) => ['bash', '-c', command],
  ...over,
});

describe('resolveSpec', () => {
  it('fills every default from the configuration', () => {
    const spec = resolveSpec({ sessionId: 's1', command: 'ls' }, ctx());
    expect(spec).toMatchObject({
      command: 'ls',
      argv: ['bash', '-c', 'ls'],
      workdir: '/work/s1',
      timeoutMs: 120_000,
      stdoutMaxBytes: 64_000,
      sandboxPolicy: { mode: 'danger-full-access' },
    });
  });

  it('caps the timeout at maxTimeoutMs and keeps a smaller one', () => {
    expect(resolveSpec({ sessionId: 's1', command: 'x', timeoutMs: 9e9 }, ctx()).timeoutMs).toBe(600_000);
    expect(resolveSpec({ sessionId: 's1', command: 'x', timeoutMs: 5 }, ctx()).timeoutMs).toBe(5);
  });

  it('resolves workdir: absolute as is, relative against the session cwd, then config.cwd, then the daemon cwd', () => {
    expect(resolveSpec({ sessionId: 's1', command: 'x', workdir: '/abs' }, ctx()).workdir).toBe('/abs');
    expect(resolveSpec({ sessionId: 's1', command: 'x', workdir: 'a/../b' }, ctx()).workdir).toBe('/work/s1/b');
    const noSessionCwd = { id: 's1' };
    expect(
      resolveSpec(
        { sessionId: 's1', command: 'x' },
        ctx({ session: noSessionCwd, config: { ...DEFAULT_CONFIG, cwd: '/cfg' } }),
      ).workdir,
    ).toBe('/cfg');
    expect(resolveSpec({ sessionId: 's1', command: 'x' }, ctx({ session: noSessionCwd })).workdir).toBe('/daemon');
  });

  it('takes the request sandbox policy over the session one over the default mode', () => {
    const session = { id: 's1', cwd: '/w', sandbox: { mode: 'read-only' as const } };
    expect(resolveSpec({ sessionId: 's1', command: 'x' }, ctx({ session })).sandboxPolicy.mode).toBe('read-only');
    expect(
      resolveSpec({ sessionId: 's1', command: 'x', sandboxPolicy: { mode: 'workspace-write' } }, ctx({ session }))
        .sandboxPolicy.mode,
    ).toBe('workspace-write');
  });
});

describe('environment', () => {
  it('scrubs credential-shaped names, EXECD_* and DSH_*', () => {
    expect(
      scrubEnv({
        PATH: '/bin',
        AWS_SECRET_ACCESS_KEY: 's',
        GH_TOKEN: 't',
        apikey: 'k',
        SSH_PRIVATE_KEY: 'p',
        EXECD_TOKEN: 'x',
        DSH_HOME: '/h',
        HOME: '/root',
      }),
    ).toEqual({ PATH: '/bin', HOME: '/root' });
  });

  it("scrubs at least the seam's /KEY|PASSWORD|SECRET|TOKEN/i and every DSH_* or EXECD_* whatever its case", () => {
    expect(
      scrubEnv({
        PATH: '/bin',
        PEER_SIGNING_KEY: 'key-secret',
        OPENAI_KEY: 'k',
        my_key_file: 'k',
        Db_Passwd: 'p',
        AZURE_CREDENTIAL: 'c',
        dsh_scrub_probe_lower: 'x',
        Dsh_Home: 'x',
        execd_socket: 'x',
        LANG: 'C.UTF-8',
      }),
    ).toEqual({ PATH: '/bin', LANG: 'C.UTF-8' });
  });

  it('layers base < terminal overrides < session env < request env < session dshEnv < request dshEnv < built-ins', () => {
    const env = buildEnv({
      base: { TERM: 'xterm', A: 'base', DSH_SHELL: '0' },
      sessionEnv: { A: 'session', PAGER: 'less' },
      requestEnv: { A: 'request' },
      sessionDshEnv: { DSH_HOME: '/s', DSH_X: 's' },
      requestDshEnv: { DSH_X: 'r' },
      sessionId: 'id-1',
    });
    expect(env).toEqual({
      TERM: 'dumb',
      NO_COLOR: '1',
      PAGER: 'less',
      GIT_PAGER: 'cat',
      A: 'request',
      DSH_HOME: '/s',
      DSH_X: 'r',
      DSH_SESSION_ID: 'id-1',
      DSH_SHELL: '1',
    });
  });

  it('masks credential-shaped values', () => {
    expect(maskEnv({ NPM_TOKEN: 'abc', PATH: '/bin' })).toEqual({ NPM_TOKEN: '***', PATH: '/bin' });
  });

  it('sets extra variables over an environment as a new map, in the order a spread gives', () => {
    // A request's variable may be named `__proto__` (JSON.parse makes it an own property): it stays one.
    const text = '{"PATH":"/bin","__proto__":"p","EXECD_SCOPE":"old","HOME":"/root"}';
    const env = JSON.parse(text) as EnvMap;
    const extra = { EXECD_SCOPE: 'marker', LANG: 'C' };
    const merged = withVariables(env, extra);
    expect(merged).toEqual({ ...env, ...extra });
    expect(Object.entries(merged)).toEqual(Object.entries({ ...env, ...extra }));
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(env.EXECD_SCOPE).toBe('old');
    expect(merged).not.toBe(env);
  });
});
