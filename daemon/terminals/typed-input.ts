/**
 * Input typed for a terminal's foreground program that it never read. When a timed-out command is
 * stopped, that input is still queued in the tty: once the program is gone the shell would read it
 * and run it as a command line (`more input` typed for a `sleep` ran as `more` after the kill).
 * A SIGINT to the foreground (signal.ts) discards it, as a typed ^C does.
 */
import { closeSync, constants, openSync, readlinkSync } from 'node:fs';
import { flushTtyInput } from '../host/libc.js';

/** A terminal's own pty, as its shell holds it. */
const PTS = /^\/dev\/pts\/\d+$/;

/** Discards the unread input of the tty that `shellPid`'s stdin is; returns why it could not. */
export function discardTypedInput(shellPid: number): string | undefined {
  let path: string;
  try {
    path = readlinkSync(`/proc/${shellPid}/fd/0`);
  } catch (error) {
    return `cannot find the terminal's tty: ${(error as Error).message}`;
  }
  if (!PTS.test(path)) return `the shell's stdin is not a pty (${path})`;
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_NOCTTY | constants.O_NONBLOCK);
  } catch (error) {
    return `cannot open ${path}: ${(error as Error).message}`;
  }
  try {
    return flushTtyInput(fd);
  } finally {
    closeSync(fd);
  }
}
