/** The child's environment (SPEC §1.4), seen from inside a real command. */
import { describe, expect, it } from 'vitest';
import { ShellResolve } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';

/** Parses `env -0` output. */
function parseEnv(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of text.split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
}

describe('child environment', () => {
  it('scrubs credentials, EXECD_* and inherited DSH_*, sets the terminal overrides, layers managed DSH_* last', async () => {
    const daemon = await startDaemon({
      env: {
        DSH_STALE: 'from-the-daemon',
        DSH_SESSION_ID: 'stale-session',
        GITHUB_TOKEN: 'ghp_secret',
        my_api_key: 'k',
        DB_PASSWORD: 'p',
        EXECD_EXTRA: 'x',
        KEEP_ME: 'kept',
        TERM: 'xterm-256color',
        PEER_SIGNING_KEY: 'key-secret',
        OPENAI_KEY: 'sk-1',
        SSH_PRIVATE_KEY: 'pk',
        AWS_ACCESS_KEY_ID: 'ak',
        APIKEY: 'a',
        Db_Passwd: 'p',
        GCP_CREDENTIALS: 'c',
        dsh_scrub_probe_lower: 'stale',
        Dsh_Mixed: 'stale',
        execd_lower: 'x',
        KEEP_TOO: 'kept',
      },
    });
    const client = await daemon.session('sess-1');
    const result = await client.run({
      sessionId: 'sess-1',
      command: 'env -0',
      env: { LAYER: 'request-env', DSH_HOME: 'from-env' },
      dshEnv: { DSH_HOME: '/home/agent', DSH_SESSION_JSONL: '/tmp/s.jsonl' },
    });
    const env = parseEnv(result.stdout.text);
    expect(env).toMatchObject({
      NO_COLOR: '1',
      TERM: 'dumb',
      PAGER: 'cat',
      GIT_PAGER: 'cat',
      KEEP_ME: 'kept',
      LAYER: 'request-env',
      DSH_HOME: '/home/agent',
      DSH_SESSION_JSONL: '/tmp/s.jsonl',
      DSH_SESSION_ID: 'sess-1',
      DSH_SHELL: '1',
    });
    expect(env.KEEP_TOO).toBe('kept');
    const gone = ['DSH_STALE', 'GITHUB_TOKEN', 'my_api_key', 'DB_PASSWORD', 'EXECD_EXTRA', 'PEER_SIGNING_KEY'];
    gone.push('OPENAI_KEY', 'SSH_PRIVATE_KEY', 'AWS_ACCESS_KEY_ID', 'APIKEY', 'Db_Passwd', 'GCP_CREDENTIALS');
    gone.push('dsh_scrub_probe_lower', 'Dsh_Mixed', 'execd_lower');
    for (const name of gone) {
      expect(env).not.toHaveProperty(name);
    }
  });

  it('layers session env, then request env, then session dshEnv, then request dshEnv', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    const { SessionOpen } = await import('../../protocol/methods.js');
    await client.call(SessionOpen, {
      sessionId: 's1',
      cwd: daemon.dir,
      env: { A: 'session', B: 'session' },
      dshEnv: { DSH_X: 'session', DSH_Y: 'session' },
    });
    const result = await client.run({
      sessionId: 's1',
      command: 'echo "$A $B $DSH_X $DSH_Y"',
      env: { B: 'request' },
      dshEnv: { DSH_Y: 'request' },
    });
    expect(result.stdout.text).toBe('session request session request\n');
  });

  it('refuses dshEnv keys that do not start with DSH_', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    await expect(client.run({ sessionId: 's1', command: 'true', dshEnv: { HOME: '/x' } })).rejects.toMatchObject({
      errorName: 'INVALID_PARAMS',
      message: 'dshEnv keys must start with DSH_ (got HOME)',
    });
  });

  it('masks credential-shaped values in shell/resolve', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const spec = await client.call(ShellResolve, {
      sessionId: 's1',
      command: 'true',
      env: { NPM_TOKEN: 'abc', PLAIN: 'v' },
    });
    expect(spec.env.NPM_TOKEN).toBe('***');
    expect(spec.env.PLAIN).toBe('v');
  });
});
