/**
 * The spawner process (see spawner.ts and spawn-service.ts): a small node that spawns the daemon's
 * children on request, so the daemon's own address space is never copied while it is busy.
 */
import { makeNonDumpable } from '../host/non-dumpable.js';
import { endWithTheChannel, serveSpawns } from './spawn-service.js';

// A fresh node is dumpable again: the orders it receives hold the commands' environments. The
// daemon logs for both when this fails (the same platform refuses both).
makeNonDumpable();
endWithTheChannel();
serveSpawns();
