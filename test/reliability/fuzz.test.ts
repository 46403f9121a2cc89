/**
 * Issue 6, test 3: protocol fuzz. Thousands of random and mutated frames and params from several
 * raw connections — wrong types, missing fields, unknown fields, huge strings, unknown methods,
 * invalid UTF-8, truncated and broken headers, garbage bytes — while a well-behaved client runs
 * alongside. The daemon stays up, every well-formed request with bad params is answered
 * InvalidParams naming the field, and every result of the well-behaved client is correct.
 *
 * The generator is seeded; set FUZZ_SEED to replay a run.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import {
  ConfigSet,
  DaemonStatus,
  JobKill,
  JobPeek,
  JobRead,
  JobRelease,
  JobWait,
  SessionClose,
  SessionOpen,
  ShellResolve,
  ShellRun,
  ShellStart,
  type AnyRequestDecl,
} from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { frameBody, rawAuthed, rawConnect, type RawConnection, type RawMessage } from '../helpers/raw.js';

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const AUTHED_CONNECTIONS = 4;
const REQUESTS_PER_CONNECTION = 1_000;
const GARBAGE_CONNECTIONS = 800;
const WELL_BEHAVED_RUNS = 300;
const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;

/** mulberry32: a small, fast, seedable generator. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, pick: <T>(items: readonly T[]): T => items[int(items.length)]! };
}

type Rng = ReturnType<typeof generator>;

/** Kinds of field, and values that break each for sure. */
const HUGE = 'h'.repeat(64_000);
const BAD_VALUES: Record<string, readonly unknown[]> = {
  sessionId: [5, null, true, [], {}, '', 'has space', 'x'.repeat(129), 'slash/inside', HUGE],
  string: [5, null, true, [], {}, 1.5],
  nonEmpty: ['', 5, null, false, [], {}],
  absPath: ['relative/dir', '', 5, null, {}, HUGE],
  number: [0, -1, '5', null, true, [], {}, HUGE],
  int: [1.5, 0, -3, '7', null, {}],
  env: ['x', 5, true, { KEY: 5 }, { KEY: null }, { KEY: {} }],
  dshEnv: [{ NOT_DSH: 'x' }, { DSH_OK: 5 }, 'x', 7],
  bool: ['true', 1, null, {}],
  jobId: [5, null, '', 'bash', 'bash-', 'BASH-1', '../bash-1', {}, HUGE],
  offset: [-1, 1.5, '3', null, {}],
};

/** A method whose params are mutated, with a valid base and the kind of each field. */
interface Template {
  decl: AnyRequestDecl;
  base: Record<string, unknown>;
  fields: Record<string, keyof typeof BAD_VALUES>;
  required: string[];
}

const EXEC_FIELDS: Template['fields'] = {
  sessionId: 'sessionId',
  command: 'nonEmpty',
  workdir: 'nonEmpty',
  timeoutMs: 'number',
  stdoutMaxBytes: 'int',
  stdin: 'string',
  env: 'env',
  dshEnv: 'dshEnv',
};

const TEMPLATES = (sessionId: string): Template[] => [
  {
    decl: ShellRun,
    base: { sessionId, command: 'echo fuzz' },
    fields: EXEC_FIELDS,
    required: ['sessionId', 'command'],
  },
  {
    decl: ShellResolve,
    base: { sessionId, command: 'echo fuzz' },
    fields: EXEC_FIELDS,
    required: ['sessionId', 'command'],
  },
  {
    decl: ShellStart,
    base: { sessionId, command: 'echo fuzz' },
    fields: EXEC_FIELDS,
    required: ['sessionId', 'command'],
  },
  ...[JobRead, JobKill, JobRelease].map((decl) => ({
    decl,
    base: { sessionId, jobId: 'bash-1' },
    fields: { sessionId: 'sessionId', jobId: 'jobId' },
    required: ['sessionId', 'jobId'],
  })),
  {
    decl: JobPeek,
    base: { sessionId, jobId: 'bash-1' },
    fields: { sessionId: 'sessionId', jobId: 'jobId', stdoutOffset: 'offset', stderrOffset: 'offset' },
    required: ['sessionId', 'jobId'],
  },
  {
    decl: JobWait,
    base: { sessionId, jobId: 'bash-1' },
    fields: { sessionId: 'sessionId', jobId: 'jobId', timeoutMs: 'number' },
    required: ['sessionId', 'jobId'],
  },
  {
    decl: SessionOpen,
    base: { sessionId, cwd: '/tmp' },
    fields: { sessionId: 'sessionId', cwd: 'absPath', env: 'env', dshEnv: 'dshEnv' },
    // Without cwd, session/open attaches (SPEC §6's re-open rule): only the id is required.
    required: ['sessionId'],
  },
  { decl: SessionClose, base: { sessionId }, fields: { sessionId: 'sessionId' }, required: ['sessionId'] },
  {
    decl: ConfigSet,
    base: { patch: {} },
    fields: {
      'patch.timeoutMs': 'number',
      'patch.graceMs': 'number',
      'patch.maxProcesses': 'int',
      'patch.enableRunInBackground': 'bool',
      persist: 'bool',
    },
    required: ['patch'],
  },
  { decl: DaemonStatus, base: {}, fields: {}, required: [] },
];

/** A well-formed request whose params are wrong, and the field its error must name. */
interface BadRequest {
  id: number;
  method: string;
  body: Buffer;
  /** Text the error message must contain; undefined for an unknown method. */
  names?: string;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const [head, ...rest] = path.split('.');
  if (rest.length === 0) target[head!] = value;
  else setPath((target[head!] = { ...(target[head!] as object) }), rest.join('.'), value);
}

let requestId = 0;
/** A framed-to-be request body with a fresh id; `rawParams` is spliced in as bytes (latin1). */
const body = (method: string, params: unknown, rawParams?: string): { id: number; body: Buffer } => {
  const id = ++requestId;
  if (rawParams !== undefined) {
    return {
      id,
      body: Buffer.from(
        `{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(method)},"params":${rawParams}}`,
        'latin1',
      ),
    };
  }
  return { id, body: Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method, params })) };
};

/** One mutated request. */
function badRequest(rng: Rng, sessionId: string): BadRequest {
  const template = rng.pick(TEMPLATES(sessionId));
  const method = template.decl.method;
  const fieldNames = Object.keys(template.fields);
  const roll = rng.int(100);
  if (roll < 8) {
    const name = `${rng.pick(['shell', 'job', 'x', ''])}/${rng.pick(['explode', 'run2', 'RUN', ''])}${rng.int(1000)}`;
    return { method: name, ...body(name, { sessionId }) };
  }
  if (roll < 18) {
    const key = `bogus${rng.int(10_000)}`;
    return { method, ...body(method, { ...template.base, [key]: rng.int(5) }), names: key };
  }
  if (roll < 26) {
    const params = rng.pick([[1, 2], ['x'], 'text', 42, null, true]);
    return { method, ...body(method, params), names: 'params' };
  }
  if (roll < 34 && template.required.length > 0) {
    const missing = rng.pick(template.required);
    const params = { ...template.base };
    delete params[missing];
    return { method, ...body(method, params), names: missing };
  }
  if (roll < 40 && 'sessionId' in template.fields) {
    // Invalid UTF-8 inside a string: it decodes to U+FFFD, which no session id may contain.
    const params = JSON.stringify(template.base).replace(`"${sessionId}"`, '"\xff\xfe\xc3"');
    return { method, ...body(method, undefined, params), names: 'sessionId' };
  }
  if (fieldNames.length === 0) {
    return { method, ...body(method, { unexpected: HUGE.slice(0, rng.int(5000)) }), names: 'unexpected' };
  }
  const field = rng.pick(fieldNames);
  const params = structuredClone(template.base);
  setPath(params, field, rng.pick(BAD_VALUES[template.fields[field]!]!));
  return { method, ...body(method, params), names: field };
}

/** Garbage for a throwaway connection: broken framing, broken JSON, non-requests. */
function garbageFrames(rng: Rng): Buffer[] {
  const randomBytes = (n: number) => Buffer.from(Array.from({ length: n }, () => rng.int(256)));
  const kinds: Array<() => Buffer> = [
    () => randomBytes(1 + rng.int(2_000)),
    () => Buffer.from('Content-Len'),
    () => Buffer.from(`Content-Length: ${rng.int(100)}\r\n`),
    () => Buffer.from('NoColonHere\r\n\r\n{}'),
    () => Buffer.from('Content-Length: abc\r\n\r\n{}'),
    () => Buffer.from('Content-Length: 12abc\r\n\r\n{}'),
    () => Buffer.from('Content-Length: 99999999999\r\n\r\n'),
    () => Buffer.from(`X-Junk: ${'j'.repeat(10_000)}`),
    () => frameBody('{"jsonrpc":"2.0","id":1,"method":'),
    () => frameBody(randomBytes(1 + rng.int(500))),
    () =>
      frameBody(
        rng.pick([
          'null',
          '5',
          '[]',
          '"x"',
          '{}',
          '{"id":3,"result":1}',
          '{"method":5,"id":1}',
          '{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"x"}}',
        ]),
      ),
    () =>
      frameBody(
        Buffer.concat([
          Buffer.from('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"token":"'),
          randomBytes(20),
          Buffer.from('"}}'),
        ]),
      ),
    () =>
      frameBody(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 2,
          method: 'shell/run',
          params: { sessionId: 's', command: 'echo no-auth' },
        }),
      ),
    () =>
      frameBody(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 2,
          method: 'initialize',
          params: { protocolVersion: 1, token: 'f'.repeat(64), client: { name: 'x' } },
        }),
      ),
    () => frameBody('{"jsonrpc":"2.0","id":4,"method":"daemon/status","params":{}}').subarray(0, 10 + rng.int(40)),
  ];
  return Array.from({ length: 1 + rng.int(3) }, () => rng.pick(kinds)());
}

/** Sends every request with at most `window` unanswered; returns the answers in order. */
async function pipelined(
  client: RawConnection,
  requests: BadRequest[],
  window: number,
): Promise<Array<RawMessage | undefined>> {
  const answers = new Array<RawMessage | undefined>(requests.length);
  let next = 0;
  const lane = async () => {
    while (next < requests.length) {
      const index = next++;
      const request = requests[index]!;
      const answer = client.answer(request.id);
      client.sendBody(request.body);
      answers[index] = await answer;
    }
  };
  await Promise.all(Array.from({ length: window }, lane));
  return answers;
}

describe('protocol fuzz', () => {
  it('survives thousands of bad frames; bad params get InvalidParams naming the field; a good client is unharmed', async () => {
    const daemon = await startDaemon({ config: { maxMessageBytes: 1_000_000 } });
    const rng = generator(SEED);
    const started = performance.now();
    let frames = 0;
    const failures: string[] = [];
    let invalidParams = 0;
    let methodNotFound = 0;

    const wellBehaved = (async () => {
      const client = await daemon.session('good');
      let correct = 0;
      let next = 0;
      // Four requests in flight at a time, as a busy harness would have.
      const lane = async () => {
        while (next < WELL_BEHAVED_RUNS) {
          const marker = `good-${next++}-${SEED}`;
          const result = await client.run({ sessionId: 'good', command: `echo ${marker}` });
          if (result.stdout.text === `${marker}\n` && result.exitCode === 0) correct += 1;
        }
      };
      await Promise.all(Array.from({ length: 4 }, lane));
      console.log(`fuzz: well-behaved client done after ${Math.round(performance.now() - started)} ms`);
      return correct;
    })();

    const authed = Array.from({ length: AUTHED_CONNECTIONS }, async (_, index) => {
      const sessionId = `fz-${index}`;
      const client = await rawAuthed(daemon.socketPath, daemon.stateDir);
      await client.request(SessionOpen.method, { sessionId, cwd: daemon.dir });
      const requests = Array.from({ length: REQUESTS_PER_CONNECTION }, () => badRequest(rng, sessionId));
      frames += requests.length;
      const answers = await pipelined(client, requests, 16);
      answers.forEach((answer, i) => {
        const request = requests[i]!;
        const code = answer?.error?.code;
        if (request.names === undefined) {
          if (code === METHOD_NOT_FOUND) methodNotFound += 1;
          else failures.push(`${request.method}: expected MethodNotFound, got ${JSON.stringify(answer)}`);
        } else if (code === INVALID_PARAMS && answer!.error!.message.includes(request.names)) {
          invalidParams += 1;
        } else {
          failures.push(
            `${request.method} (${request.names}): ${(JSON.stringify(answer) as string | undefined)?.slice(0, 300)} for ${request.body.toString('latin1').slice(0, 200)}`,
          );
        }
      });
      client.close();
    });

    let garbageClosed = 0;
    const garbage = (async () => {
      let left = GARBAGE_CONNECTIONS;
      const lane = async () => {
        while (left-- > 0) {
          const client = await rawConnect(daemon.socketPath);
          for (const bytes of garbageFrames(rng)) {
            client.sendBytes(bytes);
            frames += 1;
          }
          client.socket.end();
          await client.closed;
          garbageClosed += 1;
        }
      };
      await Promise.all(Array.from({ length: 8 }, lane));
    })();

    await Promise.all(authed);
    console.log(`fuzz: authenticated fuzzers done after ${Math.round(performance.now() - started)} ms`);
    await garbage;
    console.log(`fuzz: garbage connections done after ${Math.round(performance.now() - started)} ms`);
    const correct = await wellBehaved;

    expect(daemon.proc.exitCode).toBeNull();
    const after = await daemon.session('after');
    expect((await after.run({ sessionId: 'after', command: 'echo alive' })).stdout.text).toBe('alive\n');
    expect(failures.slice(0, 5)).toEqual([]);
    expect(frames).toBeGreaterThanOrEqual(5_000);
    expect(correct).toBe(WELL_BEHAVED_RUNS);
    console.log(
      `fuzz (seed ${SEED}): ${frames} frames over ${AUTHED_CONNECTIONS + GARBAGE_CONNECTIONS} connections, 0 daemon crashes, ` +
        `${invalidParams} InvalidParams naming the field, ${methodNotFound} MethodNotFound, ${garbageClosed} garbage connections closed, ` +
        `well-behaved client ${correct}/${WELL_BEHAVED_RUNS} correct`,
    );
  }, 180_000);
});
