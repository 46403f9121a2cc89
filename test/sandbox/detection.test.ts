/** Denial signatures and runner-failure detection. */
import { describe, expect, it } from 'vitest';
import { DenialScanner, hasDenialSignature, LANDLOCK_SIGNATURES } from '../../daemon/sandbox/denial.js';
import { confinedExit } from '../../daemon/sandbox/exit-status.js';
import { lostMountRace, runnerFailure, RunnerMessageHold } from '../../daemon/sandbox/runner-failure.js';

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

describe('lostMountRace', () => {
  it('is the remount of a mount that went away, and nothing else bwrap says', () => {
    const remount = (errno: string) =>
      `bwrap: Can't bind mount /oldroot/ on /newroot/: Unable to apply mount flags: remount "/newroot/a/merged": ${errno}`;
    expect(lostMountRace(remount('No such file or directory'))).toBe(true);
    expect(lostMountRace(remount('Invalid argument'))).toBe(true);
    expect(
      lostMountRace('bwrap: Can\'t bind mount /oldroot/x on /newroot/x: Unable to find "/newroot/x" in mount table'),
    ).toBe(true);
    expect(lostMountRace(remount('Permission denied'))).toBe(false);
    expect(lostMountRace("bwrap: Can't find source path /nonexistent: No such file or directory")).toBe(false);
    expect(lostMountRace('bwrap: No permissions to create new namespace')).toBe(false);
  });
});

describe('RunnerMessageHold', () => {
  /** Feeds `chunks` as stderr (or `stdout:` ones as stdout) and returns what was sent, in order. */
  function feed(chunks: string[], end: 'release' | 'drop') {
    const hold = new RunnerMessageHold();
    const sent: string[] = [];
    for (const chunk of chunks) {
      if (chunk.startsWith('stdout:')) {
        hold.release();
        sent.push(chunk);
      } else {
        hold.see(Buffer.from(chunk));
        hold.pass(() => sent.push(chunk));
      }
    }
    hold[end]();
    return sent;
  }

  it('keeps what may be a runner message until the run ends, and forgets it on a new start', () => {
    expect(feed(['bwr', 'ap: Can', "'t bind mount\n"], 'drop')).toEqual([]);
    expect(feed(['bwrap: x\n', 'landlock: y'], 'release')).toEqual(['bwrap: x\n', 'landlock: y']);
  });

  it('sends at once what cannot be one, and everything after', () => {
    const hold = new RunnerMessageHold();
    const sent: string[] = [];
    hold.see(Buffer.from('warning: '));
    hold.pass(() => sent.push('warning: '));
    expect(sent).toEqual(['warning: ']);
    hold.see(Buffer.from('bwrap: z\n'));
    hold.pass(() => sent.push('bwrap: z\n'));
    expect(sent).toEqual(['warning: ', 'bwrap: z\n']);
  });

  it('a second line that is not the runner’s ends the hold, in order', () => {
    const hold = new RunnerMessageHold();
    const sent: string[] = [];
    for (const chunk of ['bwrap: a\n', 'oops\n']) {
      hold.see(Buffer.from(chunk));
      hold.pass(() => sent.push(chunk));
    }
    expect(sent).toEqual(['bwrap: a\n', 'oops\n']);
  });

  it('the first stdout sends what it kept before it', () => {
    expect(feed(['bwrap: a\n', 'stdout:out'], 'drop')).toEqual(['bwrap: a\n', 'stdout:out']);
  });

  it('gives up holding past 4 KiB', () => {
    const long = `bwrap: ${'x'.repeat(5000)}`;
    const hold = new RunnerMessageHold();
    const sent: string[] = [];
    hold.see(Buffer.from(long));
    hold.pass(() => sent.push(long));
    expect(sent).toEqual([long]);
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
