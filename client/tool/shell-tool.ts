/**
 * The model-facing shell tool (`bash`, or `pwsh` on Windows): validate the model's arguments,
 * resolve the working directory from the session's identity, ask for approval of an escalation,
 * run in the daemon, render (docs/library.md).
 */
import { ShellStart, type ParamsOf } from '../../protocol/methods.js';
import type { SandboxMode, SandboxPolicy } from '../../protocol/sandbox.js';
import type { ShellRunResult, YieldedRunResult } from '../../protocol/types.js';
import { isYielded, type ExecdClient } from '../connection.js';
import { escalationHintLine, renderOutput, renderResult } from '../../shared/render.js';
import { shellArgsJsonSchema, validateShellArgs, type ArgsConfig, type ShellArgs } from './args.js';
import { toolDescription, type ShellFlavor } from './description.js';
import {
  cancelledEscalationText,
  checkEscalationTarget,
  declaredTargets,
  decideEscalation,
  escalatedPolicy,
  failedApprovalText,
  invalidApprovalText,
  rejectedEscalationText,
  sandboxInForce,
  unavailableEscalationText,
  widerTargets,
  type ApproveEscalation,
} from './escalation.js';
import { callFailure, throwIfAborted, type CallFailure } from './failure.js';
import type { ExecuteOptions, ModelTool, ToolResult, ToolSession } from './types.js';
import { resolveWorkdir } from './workdir.js';

/** The structured facts of a shell tool call. */
export type ShellToolDetails =
  | { kind: 'run'; result: ShellRunResult }
  | { kind: 'background'; jobId: string; pid: number; startedAt: string }
  | { kind: 'yielded'; result: YieldedRunResult }
  | { kind: 'invalid'; message: string }
  | { kind: 'rejected'; requestedMode: SandboxMode; outcome: 'rejected' | 'cancelled' | 'unavailable' }
  | CallFailure;

/** What a shell tool is built from. */
export interface ShellToolOptions {
  client: ExecdClient;
  session: ToolSession;
  flavor: ShellFlavor;
  /** Offer `run_in_background`. */
  background: boolean;
  /** Turn a foreground run still going after this many ms into a background job (needs `background`). */
  yieldMs?: number;
  /** Offer `sandbox_permissions`: needs a sandbox in force; without it no escalation is offered. */
  approveEscalation?: ApproveEscalation;
}

/** The optional parameters a session offers, from its sandbox policy and the harness's options. */
export function argsConfigOf(
  session: ToolSession,
  background: boolean,
  approve: ApproveEscalation | undefined,
): ArgsConfig {
  const policy = session.sandbox;
  const declared: readonly SandboxMode[] = declaredTargets(policy, approve) ?? [];
  const escalation =
    approve !== undefined && policy !== undefined && widerTargets(policy.mode).some((mode) => declared.includes(mode));
  return { background, escalation };
}

/** What the model reads for each refusal: nothing ran. */
const REFUSAL_TEXTS = {
  rejected: rejectedEscalationText,
  cancelled: cancelledEscalationText,
  unavailable: unavailableEscalationText,
} as const;

/** An approval callback that failed (threw, or answered no outcome): an error result, nothing ran. */
function approvalFailure(message: string): ToolResult<ShellToolDetails> {
  return { text: message, isError: true, details: { kind: 'error', errorName: 'ESCALATION_APPROVAL', message } };
}

/** The policy a call runs under, or what to answer instead (invalid target, refused approval). */
async function policyForCall(
  args: ShellArgs,
  workdir: string | undefined,
  options: ShellToolOptions,
  signal: AbortSignal | undefined,
): Promise<{ policy?: SandboxPolicy } | ToolResult<ShellToolDetails>> {
  const target = args.sandbox_permissions;
  const current = options.session.sandbox;
  if (target === undefined || current === undefined || options.approveEscalation === undefined) return {};
  const refusal = checkEscalationTarget(target, current.mode);
  if (refusal) return { text: refusal, isError: true, details: { kind: 'invalid', message: refusal } };
  let answer: unknown;
  try {
    answer = await options.approveEscalation(
      {
        sessionId: options.session.id,
        command: args.command,
        workdir,
        currentMode: current.mode,
        requestedMode: target,
        justification: args.justification!,
        background: args.run_in_background === true,
      },
      { signal },
    );
  } catch (cause) {
    throwIfAborted(signal);
    return approvalFailure(failedApprovalText(cause));
  }
  throwIfAborted(signal);
  const decision = decideEscalation(answer);
  if (decision.kind === 'invalid') return approvalFailure(invalidApprovalText(decision.value));
  if (decision.kind !== 'approved') {
    const text = REFUSAL_TEXTS[decision.kind](target);
    return { text, isError: true, details: { kind: 'rejected', requestedMode: target, outcome: decision.kind } };
  }
  return { policy: escalatedPolicy(current, target) };
}

/** What the model reads of a run that yielded: its output so far, then where it went on. */
export function yieldedText(result: YieldedRunResult): string {
  const output = renderOutput(result.stdout, result.stderr);
  const line = `[still running after ${result.durationMs} ms: continues as background job ${result.jobId}; read it with job_output, stop it with job_kill]`;
  return output.length === 0 ? line : `${output}${output.endsWith('\n') ? '' : '\n'}${line}`;
}

/** Builds the shell tool of a session. */
export function createShellTool(options: ShellToolOptions): ModelTool<ShellToolDetails> {
  const { client, session, flavor } = options;
  const config = argsConfigOf(session, options.background, options.approveEscalation);
  const confined = sandboxInForce(session.sandbox) ? session.sandbox : undefined;

  async function execute(
    raw: unknown,
    { signal, trusted = {} }: ExecuteOptions = {},
  ): Promise<ToolResult<ShellToolDetails>> {
    throwIfAborted(signal);
    const validated = validateShellArgs(raw, config);
    if (!validated.ok)
      return { text: validated.message, isError: true, details: { kind: 'invalid', message: validated.message } };
    const args = validated.args;
    const workdir = resolveWorkdir(args.workdir, session);
    const decided = await policyForCall(args, workdir, options, signal);
    if ('text' in decided) return decided;
    const request: ParamsOf<typeof ShellStart> = {
      sessionId: session.id,
      command: args.command,
      workdir,
      timeoutMs: args.timeoutMs,
      sandboxPolicy: decided.policy,
      // Every command gets the session's DSH_HOME, also when someone reopened the session with
      // other facts (the CLI's --session does) or the harness opened it without one.
      dshEnv: session.dshHome === undefined ? undefined : { DSH_HOME: session.dshHome },
      ...trusted,
    };
    try {
      if (args.run_in_background) {
        const started = await client.call(ShellStart, request, { signal });
        throwIfAborted(signal);
        return {
          text: `started background job ${started.jobId}`,
          isError: false,
          details: { kind: 'background', ...started },
        };
      }
      const yieldMs = options.background ? options.yieldMs : undefined;
      const answer =
        yieldMs === undefined
          ? await client.run(request, { signal })
          : await client.run({ ...request, yieldMs }, { signal });
      throwIfAborted(signal);
      if (isYielded(answer))
        return { text: yieldedText(answer), isError: false, details: { kind: 'yielded', result: answer } };
      const result = answer;
      const hintTargets = config.escalation && result.sandbox ? widerTargets(result.sandbox.mode) : [];
      const escalationHint = hintTargets.length > 0 ? escalationHintLine(hintTargets) : undefined;
      return { text: renderResult(result, { escalationHint }), isError: false, details: { kind: 'run', result } };
    } catch (error) {
      throwIfAborted(signal);
      return callFailure(error);
    }
  }

  return {
    name: flavor.name,
    description: toolDescription(flavor, {
      background: config.background,
      sandbox: confined,
      escalation: config.escalation,
    }),
    inputSchema: shellArgsJsonSchema(config),
    execute,
  };
}
