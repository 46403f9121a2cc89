/**
 * zod schemas of every result and notification of the protocol, so that `execd schema` can print
 * one complete JSON Schema document for clients in any language (PROTOCOL.md). The TypeScript types
 * in `types.ts` stay the source for TypeScript code; each schema here is checked against its type
 * at compile time (`z.ZodType<ResultOf<D>>`) and against real daemon answers in the tests.
 *
 * Built on first use like every schema (see `zod.ts`): clients that never print the schema never
 * load zod.
 */
import type { z } from 'zod';
import { configSchema } from './config.js';
import { fsChangedSchema, fsResultEntries } from './fs-results.js';
import {
  ALL_REQUESTS,
  ConfigGet,
  ConfigSet,
  DaemonShutdown,
  DaemonUpgrade,
  DaemonStatus,
  Initialize,
  JobClean,
  JobKill,
  JobList,
  JobPeek,
  JobRead,
  JobRelease,
  JobWait,
  JobWrite,
  OutputRead,
  RenderJobRead,
  RenderResult,
  SessionClose,
  TerminalAttach,
  TerminalClose,
  TerminalDetach,
  TerminalList,
  TerminalOpen,
  TerminalRead,
  TerminalResize,
  TerminalRun,
  TerminalSend,
  TerminalSignal,
  TerminalWrite,
  SessionOpen,
  SessionUpdate,
  ShellResolve,
  ShellRun,
  ShellStart,
  ShellWrite,
  type AnyRequestDecl,
  type ResultOf,
} from './methods.js';
import {
  jobReadResultSchema,
  jobSnapshotSchema,
  limitsCapabilitySchema,
  limitsResultSchema,
  sandboxBackendInfoSchema,
  peekedStreamSchema,
  shellRunResultSchema,
  yieldedRunResultSchema,
  terminalSnapshotSchema,
  waitReasonSchema,
} from './result-schemas.js';
import { sandboxModeSchema, sandboxPolicySchema } from './sandbox.js';
import { TERMINAL_SIGNALS, type TerminalExitedParams, type TerminalOutputParams } from './terminal.js';
import {
  WAIT_ENDS,
  type JobExitedParams,
  type OutputBytesProgress,
  type OutputProgress,
  type WaitEnd,
} from './types.js';
import { zod, type Zod } from './zod.js';

/** One result schema, checked against the declared result type of its method. */
interface ResultEntry {
  decl: AnyRequestDecl;
  build: (z: Zod) => z.ZodType;
}

function result<D extends AnyRequestDecl>(decl: D, build: (z: Zod) => z.ZodType<ResultOf<D>>): ResultEntry {
  return { decl, build };
}

/** Built on first use: the declarations it names are initialised by then, whatever the import order. */
const results = (): ResultEntry[] => [
  result(Initialize, (z) =>
    z.object({
      protocolVersion: z.literal(1),
      daemon: z.object({ version: z.string(), pid: z.number(), platform: z.string(), startedAt: z.string() }),
      capabilities: z.object({
        shell: z.enum(['bash', 'pwsh']),
        background: z.boolean(),
        sandboxModes: z.array(sandboxModeSchema()),
        sandbox: sandboxBackendInfoSchema(),
        streaming: z.literal(true),
        terminals: z.boolean(),
        limits: limitsCapabilitySchema(),
      }),
      admin: z.boolean().optional(),
    }),
  ),
  result(SessionOpen, (z) =>
    z.object({ sessionId: z.string(), reattached: z.boolean(), jobs: z.array(jobSnapshotSchema()) }),
  ),
  result(SessionUpdate, (z) =>
    z.object({
      sessionId: z.string(),
      cwd: z.string(),
      envNames: z.array(z.string()),
      sandbox: z.object({
        mode: sandboxModeSchema(),
        workspaceRoot: z.string().optional(),
        escalationTargets: z.array(sandboxModeSchema()),
      }),
      limits: limitsResultSchema().optional(),
    }),
  ),
  result(SessionClose, (z) =>
    z.object({ killedJobs: z.number(), closedTerminals: z.number(), removedFiles: z.number() }),
  ),
  result(ShellResolve, (z) =>
    z.object({
      command: z.string(),
      argv: z.array(z.string()),
      workdir: z.string(),
      timeoutMs: z.number(),
      stdoutMaxBytes: z.number(),
      env: z.record(z.string(), z.string()),
      sandboxPolicy: sandboxPolicySchema(),
      limits: limitsResultSchema().optional(),
    }),
  ),
  result(ShellRun, (z) => z.union([shellRunResultSchema(), yieldedRunResultSchema()])),
  result(ShellStart, (z) => z.object({ jobId: z.string(), pid: z.number(), startedAt: z.string() })),
  result(JobRead, () => jobReadResultSchema()),
  result(JobPeek, (z) =>
    z.object({ stdout: peekedStreamSchema(), stderr: peekedStreamSchema(), job: jobSnapshotSchema() }),
  ),
  result(JobWait, (z) => jobSnapshotSchema().extend({ endedBy: z.enum(WAIT_ENDS as [WaitEnd, ...WaitEnd[]]) })),
  result(JobKill, (z) => z.object({ killed: z.boolean() })),
  result(JobList, (z) => z.array(jobSnapshotSchema())),
  result(JobRelease, (z) => z.object({ released: z.literal(true) })),
  result(JobClean, (z) => z.object({ released: z.number(), bytes: z.number() })),
  result(OutputRead, (z) =>
    z.object({
      text: z.string(),
      offset: z.number(),
      nextOffset: z.number(),
      eof: z.boolean(),
      size: z.number(),
      data: z.string().optional(),
    }),
  ),
  result(ConfigGet, () => configSchema()),
  result(ConfigSet, () => configSchema()),
  result(DaemonStatus, (z) =>
    z.object({
      version: z.string(),
      pid: z.number(),
      uptimeMs: z.number(),
      sessions: z.array(
        z.object({
          sessionId: z.string(),
          cwd: z.string(),
          connections: z.number(),
          runningJobs: z.number(),
          runningTerminals: z.number(),
          limits: limitsResultSchema().optional(),
          usage: z
            .object({
              memoryBytes: z.number(),
              memoryPeakBytes: z.number().optional(),
              cpuMicros: z.number().optional(),
            })
            .optional(),
        }),
      ),
      jobs: z.object({ running: z.number(), settled: z.number() }),
      terminals: z.object({ running: z.number(), exited: z.number() }),
      processes: z.number(),
      spawns: z.object({ inline: z.number(), spawner: z.number() }),
      memory: z.array(
        z.object({ role: z.enum(['daemon', 'spawner']), pid: z.number(), rssBytes: z.number(), pssBytes: z.number() }),
      ),
      listeners: z.array(z.string()),
      spill: z.object({ files: z.number(), bytes: z.number() }),
      sandbox: sandboxBackendInfoSchema(),
      limits: limitsCapabilitySchema(),
      config: configSchema(),
    }),
  ),
  result(DaemonShutdown, (z) => z.object({ ok: z.literal(true) })),
  result(DaemonUpgrade, (z) => z.object({ pid: z.number(), version: z.string(), program: z.string() })),
  result(JobWrite, (z) => z.object({ written: z.number() })),
  result(ShellWrite, (z) => z.object({ written: z.number() })),
  result(TerminalOpen, (z) => z.object({ terminal: terminalSnapshotSchema(), motd: z.string() })),
  result(TerminalSend, (z) =>
    z.object({
      output: z.string(),
      waitReason: waitReasonSchema(),
      exitCode: z.number().optional(),
      cursor: z.number(),
      truncated: z.boolean(),
      timeoutMs: z.number(),
      terminal: terminalSnapshotSchema(),
    }),
  ),
  result(TerminalRun, (z) =>
    z.object({
      output: z.string(),
      exitCode: z.number().optional(),
      state: z.enum(['completed', 'waiting_for_input', 'idle', 'timed_out', 'exited', 'not_at_prompt', 'running']),
      interrupted: z.boolean().optional(),
      stoppedWith: z.object({ signal: z.enum(TERMINAL_SIGNALS), pgid: z.number(), command: z.string() }).optional(),
      truncated: z.boolean(),
      outputBytes: z.number(),
      outputSpillPath: z.string().optional(),
      saveError: z.string().optional(),
      waitReason: waitReasonSchema(),
      cursor: z.number(),
      timeoutMs: z.number(),
      terminal: terminalSnapshotSchema(),
    }),
  ),
  result(TerminalRead, (z) =>
    z.object({
      text: z.string(),
      offset: z.number(),
      nextOffset: z.number(),
      droppedBytes: z.number(),
      exitCode: z.number().optional(),
      terminal: terminalSnapshotSchema(),
    }),
  ),
  result(TerminalWrite, (z) => z.object({ written: z.number() })),
  result(TerminalSignal, (z) => z.object({ delivered: z.boolean(), pgid: z.number().nullable() })),
  result(TerminalResize, () => terminalSnapshotSchema()),
  result(TerminalAttach, (z) => z.object({ nextOffset: z.number() })),
  result(TerminalDetach, (z) => z.object({ nextOffset: z.number() })),
  result(TerminalClose, (z) => z.object({ closed: z.boolean() })),
  result(TerminalList, (z) => z.array(terminalSnapshotSchema())),
  result(RenderResult, (z) => z.object({ text: z.string() })),
  result(RenderJobRead, (z) => z.object({ text: z.string() })),
  ...fsResultEntries(),
];

/** The result schema of `method`, or undefined when it has none (a test keeps that list empty). */
export function resultSchema(method: string): z.ZodType | undefined {
  const entry = results().find((candidate) => candidate.decl.method === method);
  return entry?.build(zod());
}

/** Methods declared in `ALL_REQUESTS` without a result schema here. */
export function methodsWithoutResultSchema(): string[] {
  return ALL_REQUESTS.map((decl) => decl.method).filter((method) => !results().some((e) => e.decl.method === method));
}

/** Params schemas of the daemon → client notifications, by method. */
export const NOTIFICATION_SCHEMAS: Record<string, (z: Zod) => z.ZodType> = {
  'job/exited': (z): z.ZodType<JobExitedParams> => z.object({ sessionId: z.string(), job: jobSnapshotSchema() }),
  'terminal/output': (z): z.ZodType<TerminalOutputParams> =>
    z.object({ terminalId: z.string(), data: z.string(), offset: z.number() }),
  'fs/changed': fsChangedSchema,
  'terminal/exited': (z): z.ZodType<TerminalExitedParams> =>
    z.object({ sessionId: z.string(), terminal: terminalSnapshotSchema() }),
  '$/progress': (z): z.ZodType<{ token: string | number; value: OutputProgress | OutputBytesProgress }> =>
    z.object({
      token: z.union([z.string(), z.number()]),
      value: z.union([
        z.object({ stream: z.enum(['stdout', 'stderr']), text: z.string() }),
        z.object({ stream: z.enum(['stdout', 'stderr']), data: z.string() }),
      ]),
    }),
};
