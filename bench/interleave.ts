/** Interleaved measurement: the sides take turns (A, B, A, B …) so machine drift hits all alike. */
import { msSince } from './stats.js';

/** One side of a comparison: a name and one timed unit of its work. */
export interface Side {
  name: string;
  /** Resolves with the milliseconds it took when the side measures itself (a baseline in another process). */
  once: (iteration: number) => Promise<void | number>;
}

/**
 * Runs `warmup` untimed then `rounds` timed iterations of every side, rotating which side goes
 * first each round; returns each side's durations in milliseconds.
 */
export async function interleave(sides: readonly Side[], rounds: number, warmup = 0): Promise<Map<string, number[]>> {
  const times = new Map(sides.map((side) => [side.name, [] as number[]]));
  for (let round = -warmup; round < rounds; round++) {
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(Math.abs(round) + k) % sides.length]!;
      const start = performance.now();
      const measured = await side.once(round);
      if (round >= 0) times.get(side.name)!.push(typeof measured === 'number' ? measured : msSince(start));
    }
  }
  return times;
}
