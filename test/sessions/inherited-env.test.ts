/**
 * What a session's commands inherit from whoever started the daemon (issue 26.15): credentials
 * inside URL-shaped values are scrubbed, and `serve --clean-env` / `EXECD_CLEAN_ENV=1` starts
 * every command from a clean base — tried with a daemon auto-started from a project's shell.
 */
import { describe, expect, it } from 'vitest';
import { CLEAN_PATH, baseEnvironment, maskEnv, scrubEnv, scrubUrlPasswords } from '../../daemon/runs/env.js';
import { cliWorld } from '../helpers/cli.js';

const PROJECT_SHELL = {
  VIRTUAL_ENV: '/home/u/project/.venv',
  DATABASE_URL: 'postgres://app:s3cret-pw@db.internal:5432/app',
  PROJECT_ONLY: 'from-the-first-caller',
};

const PROBE = 'echo "venv=$VIRTUAL_ENV db=$DATABASE_URL only=$PROJECT_ONLY home=$HOME path=$PATH"';

describe('the environment a session inherits', { timeout: 180_000 }, () => {
  it('an auto-started daemon scrubs the password inside DATABASE_URL', async () => {
    const world = cliWorld({ env: { ...PROJECT_SHELL, PATH: `/home/u/project/.venv/bin:${process.env.PATH}` } });
    const run = await world.run(['run', '--', PROBE]);
    console.log(run.stdout.trim());
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('db=postgres://app:***@db.internal:5432/app ');
    expect(run.stdout).not.toContain('s3cret-pw');
    // Without --clean-env the rest of the first caller's environment is the daemon's base.
    expect(run.stdout).toContain('venv=/home/u/project/.venv ');
  });

  it('with EXECD_CLEAN_ENV=1 an auto-started daemon passes nothing of its starter on to later sessions', async () => {
    const world = cliWorld({
      env: { ...PROJECT_SHELL, EXECD_CLEAN_ENV: '1', PATH: `/home/u/project/.venv/bin:${process.env.PATH}` },
    });
    expect((await world.run(['run', '--', 'true'])).code).toBe(0);
    // Another caller, another session, later: the daemon's base is clean.
    const run = await world.run(['run', '--session', 'later', '--', PROBE], {
      env: { VIRTUAL_ENV: '', PROJECT_ONLY: '' },
    });
    console.log(run.stdout.trim());
    expect(run.stdout).toBe(`venv= db= only= home=${process.env.HOME} path=${CLEAN_PATH}\n`);
  });
});

describe('scrubbing (pure)', () => {
  it('replaces URL passwords anywhere in a value, keeps the user and host', () => {
    expect(scrubUrlPasswords('https://u:p@h/x')).toBe('https://u:***@h/x');
    expect(scrubUrlPasswords('a=redis://:pw@h:6379 b=amqp://x:y@q')).toBe('a=redis://:***@h:6379 b=amqp://x:***@q');
    expect(scrubUrlPasswords('https://user@host/path:x@y')).toBe('https://user@host/path:x@y');
    expect(scrubUrlPasswords('no url here: a:b@c')).toBe('no url here: a:b@c');
    expect(scrubEnv({ HTTPS_PROXY: 'http://me:hunter2@proxy:3128', API_TOKEN: 't' })).toEqual({
      HTTPS_PROXY: 'http://me:***@proxy:3128',
    });
    expect(maskEnv({ DB: 'mysql://r:pw@h/d' })).toEqual({ DB: 'mysql://r:***@h/d' });
  });

  it('a clean base keeps the user, home, locale and the system PATH only', () => {
    const base = baseEnvironment(
      { HOME: '/h', USER: 'u', LANG: 'C.UTF-8', LC_ALL: 'C', PATH: '/venv/bin:/usr/bin', VIRTUAL_ENV: '/venv', X: '1' },
      true,
    );
    expect(base).toEqual({ PATH: CLEAN_PATH, HOME: '/h', USER: 'u', LANG: 'C.UTF-8', LC_ALL: 'C' });
  });
});
