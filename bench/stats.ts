/** Order statistics and ratio figures for the bench: pure functions, no I/O. */

/** The `p`-th percentile (0–100) of `values`, nearest-rank; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** The median of `values`. */
export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** How a figure is compared with its target. */
export type Comparison = 'at-most' | 'at-least';

/** One printed line of the bench: a measured value and, when it has one, its target. */
export interface Figure {
  /** `B1 p50 ratio vs spawn`. */
  label: string;
  value: number;
  /** The target; absent for figures printed to explain others. */
  target?: number;
  comparison?: Comparison;
  /** Digits after the point when printed. */
  digits?: number;
  /** Unit appended to the value and target, e.g. ` ms`. */
  unit?: string;
  /** Appended in parentheses after the target: what the figure was measured from. */
  note?: string;
}

/** True when a figure with a target meets it (a NaN never does). */
export function meets(figure: Figure): boolean {
  if (figure.target === undefined) return true;
  if (!Number.isFinite(figure.value)) return false;
  return figure.comparison === 'at-least' ? figure.value >= figure.target : figure.value <= figure.target;
}

/** `B1 p50 ratio vs spawn: 1.18 (target ≤ 1.30)`. */
export function formatFigure(figure: Figure): string {
  const digits = figure.digits ?? 2;
  const unit = figure.unit ?? '';
  const value = Number.isFinite(figure.value) ? figure.value.toFixed(digits) : 'n/a';
  const parts: string[] = [];
  if (figure.target !== undefined) {
    const sign = figure.comparison === 'at-least' ? '≥' : '≤';
    parts.push(`target ${sign} ${figure.target.toFixed(digits)}${unit}${meets(figure) ? '' : ', NOT MET'}`);
  }
  if (figure.note) parts.push(figure.note);
  return `${figure.label}: ${value}${unit}${parts.length > 0 ? ` (${parts.join('; ')})` : ''}`;
}

/** `bench: N of M targets met`. */
export function formatSummary(figures: readonly Figure[]): string {
  const targeted = figures.filter((figure) => figure.target !== undefined);
  return `bench: ${targeted.filter(meets).length} of ${targeted.length} targets met`;
}

/** Milliseconds elapsed since `start` (a `performance.now()` reading). */
export function msSince(start: number): number {
  return performance.now() - start;
}
