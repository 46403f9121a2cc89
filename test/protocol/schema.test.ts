/**
 * The protocol's JSON Schema document (SPEC §11): complete (every method has params and result,
 * every notification its params), printed by `execd schema` without a daemon, and true — the
 * answers of a real daemon validate against the result schemas it is generated from.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  ALL_REQUESTS,
  ConfigGet,
  ConfigSet,
  DaemonStatus,
  JobClean,
  JobKill,
  JobList,
  JobPeek,
  JobRead,
  JobRelease,
  JobWait,
  OutputRead,
  RenderJobRead,
  RenderResult,
  SessionClose,
  SessionOpen,
  SessionUpdate,
  ShellResolve,
  ShellRun,
  ShellStart,
  type AnyRequestDecl,
} from '../../protocol/methods.js';
import {
  FsDownloadBegin,
  FsDownloadChunk,
  FsDownloadEnd,
  FsList,
  FsMkdir,
  FsMove,
  FsRead,
  FsRemove,
  FsStat,
  FsUnwatch,
  FsUploadAbort,
  FsUploadBegin,
  FsUploadChunk,
  FsUploadCommit,
  FsWatch,
  FsWrite,
} from '../../protocol/fs.js';
import { methodsWithoutResultSchema, NOTIFICATION_SCHEMAS, resultSchema } from '../../protocol/results.js';
import type { ProtocolSchemaDocument } from '../../protocol/json-schema.js';
import type { ShellRunResult } from '../../protocol/types.js';
import { CLI, startDaemon } from '../helpers/daemon.js';

describe('the protocol schema', () => {
  it('has a result schema for every declared method', () => {
    expect(methodsWithoutResultSchema()).toEqual([]);
  });

  it('is printed by execd schema without any daemon', async () => {
    const env = { ...process.env, EXECD_SOCKET: '/nonexistent/execd.sock', EXECD_STATE_DIR: '/nonexistent/state' };
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'schema'], { env });
    const document = JSON.parse(stdout) as ProtocolSchemaDocument;
    expect(Object.keys(document.methods).sort()).toEqual(ALL_REQUESTS.map((decl) => decl.method).sort());
    expect(Object.keys(document.notifications).sort()).toEqual(Object.keys(NOTIFICATION_SCHEMAS).sort());
    for (const [method, entry] of Object.entries(document.methods)) {
      expect(entry.params, method).toBeTypeOf('object');
      expect(entry.result, method).not.toEqual({});
    }
    expect(document.methods['shell/run']!.params).toMatchObject({
      type: 'object',
      required: expect.arrayContaining(['sessionId', 'command']) as unknown,
    });
  });

  it('describes what a real daemon answers', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('schema');
    const answers: Array<[AnyRequestDecl, unknown]> = [];
    const call = async <D extends AnyRequestDecl>(decl: D, params: Parameters<typeof client.call<D>>[1]) => {
      const answer = await client.call(decl, params);
      answers.push([decl, answer]);
      return answer;
    };
    const sessionId = 'schema';
    answers.push([ALL_REQUESTS[0], client.info]);
    await call(SessionOpen, { sessionId, cwd: daemon.dir });
    await call(SessionUpdate, { sessionId, env: { A: '1' } });
    await call(ShellResolve, { sessionId, command: 'true' });
    const run = (await call(ShellRun, { sessionId, command: 'echo out; echo err >&2; exit 2' })) as ShellRunResult;
    const started = await call(ShellStart, { sessionId, command: 'echo job; sleep 60' });
    const jobId = started.jobId;
    await call(JobPeek, { sessionId, jobId });
    await call(JobKill, { sessionId, jobId });
    await call(JobWait, { sessionId, jobId });
    const read = await call(JobRead, { sessionId, jobId, waitMs: 100 });
    await call(OutputRead, { sessionId, path: read.job.stdoutPath!, maxBytes: 4 });
    await call(JobList, { sessionId });
    await call(JobRelease, { sessionId, jobId });
    await call(JobClean, { sessionId });
    await call(ConfigGet, {});
    await call(ConfigSet, { patch: { graceMs: 2000 } });
    await call(DaemonStatus, {});
    await call(RenderResult, { result: run });
    await call(RenderJobRead, { read });
    const path = 'schema-file';
    const written = await call(FsWrite, { sessionId, path, data: 'aGkK', createParents: true });
    await call(FsStat, { sessionId, path });
    await call(FsRead, { sessionId, path, length: 2 });
    await call(FsList, { sessionId, path: '.', limit: 1 });
    await call(FsMkdir, { sessionId, path: 'schema-dir' });
    await call(FsMove, { sessionId, from: path, to: 'schema-dir/moved' });
    const watch = await call(FsWatch, { sessionId, path: 'schema-dir' });
    await call(FsUnwatch, { sessionId, watchId: watch.watchId });
    const upload = await call(FsUploadBegin, { sessionId, path: 'up', ifMatch: 'absent' });
    await call(FsUploadChunk, { sessionId, uploadId: upload.uploadId, offset: 0, data: 'aGkK' });
    await call(FsUploadCommit, { sessionId, uploadId: upload.uploadId, size: 3 });
    const aborted = await call(FsUploadBegin, { sessionId, path: 'up2' });
    await call(FsUploadAbort, { sessionId, uploadId: aborted.uploadId });
    const download = await call(FsDownloadBegin, { sessionId, path: 'up' });
    await call(FsDownloadChunk, { sessionId, downloadId: download.downloadId, offset: 0 });
    await call(FsDownloadEnd, { sessionId, downloadId: download.downloadId });
    await call(FsRemove, { sessionId, path: 'schema-dir', recursive: true });
    expect(written.size).toBe(3);
    await call(SessionClose, { sessionId });
    for (const [decl, answer] of answers) {
      const parsed = resultSchema(decl.method)!.safeParse(answer);
      expect(parsed.success ? 'ok' : `${decl.method}: ${parsed.error.message}`).toBe('ok');
      // Parsing drops fields the schema does not know: what is left must be the whole answer.
      expect(parsed.data, decl.method).toEqual(answer);
    }
  });
});
