/**
 * Byte-exact output and an open stdin over the wire (issue 26.3, 26.4), on a raw socket as a client
 * in another language speaks it: `outputEncoding: 'base64'` streams the exact bytes,
 * `keepStdinOpen` + `shell/write` feed a running command, `output/read` with `encoding: 'base64'`
 * pages a spill file byte for byte, and misuse is refused naming the field.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { rawAuthed, type RawConnection, type RawMessage } from '../helpers/raw.js';
import { startDaemon } from '../helpers/daemon.js';

/** Bytes no UTF-8 decoding keeps: invalid sequences, NUL, a lone continuation byte. */
const BINARY = Buffer.from([0xff, 0xfe, 0x00, 0x41, 0x80, 0xc3, 0x28, 0x0a, 0xe2, 0x82]);
const printfOf = (bytes: Buffer) => `printf '${[...bytes].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('')}'`;

async function session(): Promise<RawConnection> {
  const daemon = await startDaemon();
  const raw = await rawAuthed(daemon.socketPath, daemon.stateDir);
  const opened = await raw.request('session/open', { sessionId: 'bytes', cwd: daemon.dir });
  expect(opened?.result).toBeDefined();
  return raw;
}

/** The bytes of every base64 `$/progress` of `token` on `stream`, in order. */
function streamed(raw: RawConnection, token: string, stream: 'stdout' | 'stderr'): Buffer {
  const values = raw.messages
    .filter(
      (m: RawMessage & { params?: { token: string; value: { stream: string; data?: string } } }) =>
        m.method === '$/progress',
    )
    .map((m) => (m as { params: { token: string; value: { stream: string; data?: string } } }).params)
    .filter((p) => p.token === token && p.value.stream === stream);
  return Buffer.concat(values.map((p) => Buffer.from(p.value.data ?? '', 'base64')));
}

describe('byte-exact runs over the wire', { timeout: 60_000 }, () => {
  it("outputEncoding 'base64' streams the exact bytes; the default text mode cannot", async () => {
    const raw = await session();
    const run = await raw.request('shell/run', {
      sessionId: 'bytes',
      command: `${printfOf(BINARY)}; ${printfOf(BINARY)} >&2`,
      outputToken: 'b64',
      outputEncoding: 'base64',
    });
    expect(run?.result).toMatchObject({ exitCode: 0 });
    expect(streamed(raw, 'b64', 'stdout').equals(BINARY)).toBe(true);
    expect(streamed(raw, 'b64', 'stderr').equals(BINARY)).toBe(true);
    await raw.request('shell/run', { sessionId: 'bytes', command: printfOf(BINARY), outputToken: 'txt' });
    const text = raw.messages
      .filter((m) => m.method === '$/progress')
      .map((m) => (m as unknown as { params: { token: string; value: { text?: string } } }).params)
      .filter((p) => p.token === 'txt')
      .map((p) => p.value.text)
      .join('');
    expect(Buffer.from(text).equals(BINARY)).toBe(false);
  });

  it('keepStdinOpen starts the command at once; shell/write feeds it, in base64, until eof', async () => {
    const raw = await session();
    const data = Buffer.concat([BINARY, Buffer.alloc(300_000, 7), BINARY]);
    const running = raw.request('shell/run', {
      sessionId: 'bytes',
      command: 'echo started; sha256sum',
      outputToken: 'in',
      outputEncoding: 'base64',
      keepStdinOpen: true,
    });
    // The command runs before stdin has any data.
    for (let i = 0; i < 200 && !streamed(raw, 'in', 'stdout').toString().includes('started'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(streamed(raw, 'in', 'stdout').toString()).toBe('started\n');
    for (let at = 0; at < data.length; at += 100_000) {
      const chunk = data.subarray(at, at + 100_000);
      const written = await raw.request('shell/write', {
        sessionId: 'bytes',
        outputToken: 'in',
        data: chunk.toString('base64'),
        encoding: 'base64',
      });
      expect(written?.result).toEqual({ written: chunk.length });
    }
    expect(
      (await raw.request('shell/write', { sessionId: 'bytes', outputToken: 'in', data: '', eof: true }))?.result,
    ).toEqual({
      written: 0,
    });
    expect((await running)?.result).toMatchObject({ exitCode: 0 });
    const digest = createHash('sha256').update(data).digest('hex');
    expect(streamed(raw, 'in', 'stdout').toString()).toBe(`started\n${digest}  -\n`);
    // The run is over: its stdin is gone.
    const late = await raw.request('shell/write', { sessionId: 'bytes', outputToken: 'in', data: 'x' });
    expect(late?.error?.data?.code).toBe('STDIN_CLOSED');
  });

  it('a command that does not read its open stdin ends; a pending write is answered STDIN_CLOSED', async () => {
    const raw = await session();
    const running = raw.request('shell/run', {
      sessionId: 'bytes',
      command: 'sleep 0.5; echo done',
      outputToken: 'idle',
      keepStdinOpen: true,
    });
    // More than a pipe holds: the write waits for a reader that never comes.
    const write = raw.request('shell/write', {
      sessionId: 'bytes',
      outputToken: 'idle',
      data: Buffer.alloc(1024 * 1024).toString('base64'),
      encoding: 'base64',
    });
    expect((await running)?.result).toMatchObject({ exitCode: 0 });
    expect((await write)?.error?.data?.code).toBe('STDIN_CLOSED');
  });

  it("output/read with encoding 'base64' pages a spill file byte for byte", async () => {
    const raw = await session();
    const payload = Buffer.concat(Array.from({ length: 2000 }, () => BINARY));
    const run = (await raw.request('shell/run', {
      sessionId: 'bytes',
      command: `for i in $(seq 2000); do ${printfOf(BINARY)}; done`,
      stdoutMaxBytes: 1024,
    })) as { result: { stdout: { spillPath: string; truncated: boolean } } };
    expect(run.result.stdout.truncated).toBe(true);
    const pages: Buffer[] = [];
    let offset = 0;
    for (;;) {
      const page = (await raw.request('output/read', {
        sessionId: 'bytes',
        path: run.result.stdout.spillPath,
        offset,
        maxBytes: 7001,
        encoding: 'base64',
      })) as { result: { data: string; text: string; nextOffset: number; eof: boolean } };
      expect(page.result.text).toBe('');
      pages.push(Buffer.from(page.result.data, 'base64'));
      offset = page.result.nextOffset;
      if (page.result.eof) break;
    }
    expect(Buffer.concat(pages).equals(payload)).toBe(true);
  });

  it('refuses streamed-only fields without outputToken, stdin with keepStdinOpen, and bad base64, naming the field', async () => {
    const raw = await session();
    const base = { sessionId: 'bytes', command: 'true' };
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['shell/run', { ...base, outputEncoding: 'base64' }, /outputEncoding.*needs outputToken/],
      ['shell/run', { ...base, keepStdinOpen: true }, /keepStdinOpen.*needs outputToken/],
      ['shell/run', { ...base, keepCapture: false }, /keepCapture.*needs outputToken/],
      ['shell/run', { ...base, outputToken: 1, outputEncoding: 'hex' }, /outputEncoding.*text or base64/],
      ['shell/run', { ...base, outputToken: 1, keepStdinOpen: true, stdin: 'x' }, /stdin.*excludes keepStdinOpen/],
      ['shell/write', { sessionId: 'bytes', outputToken: 1, data: '%%%', encoding: 'base64' }, /data: must be base64/],
    ];
    for (const [method, params, message] of cases) {
      const answer = await raw.request(method, params);
      expect(answer?.error?.data?.code, JSON.stringify(params)).toBe('INVALID_PARAMS');
      expect(answer?.error?.message).toMatch(message);
    }
    const nobody = await raw.request('shell/write', { sessionId: 'bytes', outputToken: 'none', data: 'x' });
    expect(nobody?.error?.data?.code).toBe('STDIN_CLOSED');
  });
});
