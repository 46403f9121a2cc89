/** Denial signatures and runner-failure detection. */
import { describe, expect, it } from 'vitest';
import { DenialScanner, hasDenialSignature, LANDLOCK_SIGNATURES } from '../../daemon/sandbox/denial.js';
import { confinedExit } from '../../daemon/sandbox/exit-status.js';
import { runnerFailure } from '../../daemon/sandbox/runner-failure.js';

describe('DenialScanner', () => {
  it('finds the signature of every common tool', () => {
    for (const line of [
      "touch: cannot touch '/etc/x': Read-only file system",
      'bash: /etc/x: Read-only file system',
      "OSError: [Errno 30] Read-only file system: '/etc/x'",
    ]) {
      const scanner = new DenialScanner();
      scanner.write(Buffer.from(`${line}\n`));
      expect(scanner.denied, line).toBe(true);
    }
  });

  it('finds a signature cut by chunk boundaries, byte by byte', () => {
    const scanner = new DenialScanner();
    for (const byte of Buffer.from('noise é\nmkdir: cannot create directory: Read-only file system\n'))
      scanner.write(Buffer.from([byte]));
    expect(scanner.denied).toBe(true);
  });

  it('does not count Permission denied, or a partial signature', () => {
    const scanner = new DenialScanner();
    scanner.write(Buffer.from('cat: /root/x: Permission denied\n'));
    scanner.write(Buffer.from('Read-only file'));
    scanner.write(Buffer.from(' sys\nRead-only fi'));
    scanner.write(Buffer.from('le\n'));
    expect(scanner.denied).toBe(false);
    expect(hasDenialSignature('Permission denied')).toBe(false);
  });
});

describe('DenialScanner under Landlock', () => {
  it('counts Permission denied, the EACCES Landlock refuses with, and a read-only mount', () => {
    for (const line of ["touch: cannot touch '/etc/x': Permission denied", 'bash: /x: Read-only file system']) {
      const scanner = new DenialScanner(LANDLOCK_SIGNATURES);
      scanner.write(Buffer.from(`${line}\n`));
      expect(scanner.denied, line).toBe(true);
    }
    const scanner = new DenialScanner(LANDLOCK_SIGNATURES);
    for (const byte of Buffer.from('mkdir: x: Permission denied\n')) scanner.write(Buffer.from([byte]));
    expect(scanner.denied).toBe(true);
  });
});

describe('runnerFailure', () => {
  const base = { exitCode: 1, stdoutBytes: 0, stderrTruncated: false };

  it("names bwrap's own message when bwrap failed before the command ran", () => {
    expect(runnerFailure({ ...base, stderr: "bwrap: Can't find source path /x: No such file or directory\n" })).toBe(
      "bwrap: Can't find source path /x: No such file or directory",
    );
  });

  it("names the Landlock launcher's own message", () => {
    expect(runnerFailure({ ...base, stderr: 'landlock: cannot grant /x: ENOENT\n' })).toBe(
      'landlock: cannot grant /x: ENOENT',
    );
  });

  it('is undefined for a command that failed by itself', () => {
    expect(runnerFailure({ ...base, stderr: 'oops\n' })).toBeUndefined();
    expect(runnerFailure({ ...base, stderr: 'bwrap: x\nmore\n' })).toBeUndefined();
    expect(runnerFailure({ ...base, exitCode: 2, stderr: 'bwrap: x\n' })).toBeUndefined();
    expect(runnerFailure({ ...base, stdoutBytes: 3, stderr: 'bwrap: x\n' })).toBeUndefined();
    expect(runnerFailure({ ...base, stderrTruncated: true, stderr: 'bwrap: x\n' })).toBeUndefined();
    expect(runnerFailure({ ...base, stderr: '' })).toBeUndefined();
  });
});

describe('confinedExit', () => {
  it('maps 128+SIGTERM back to the signal only when execd sent SIGTERM', () => {
    expect(confinedExit({ exitCode: 143, signal: null }, true)).toEqual({ exitCode: null, signal: 'SIGTERM' });
    expect(confinedExit({ exitCode: 143, signal: null }, false)).toEqual({ exitCode: 143, signal: null });
    expect(confinedExit({ exitCode: 0, signal: null }, true)).toEqual({ exitCode: 0, signal: null });
    expect(confinedExit({ exitCode: null, signal: 'SIGKILL' }, true)).toEqual({ exitCode: null, signal: 'SIGKILL' });
  });
});
