/** Plain-text tables for people: left-aligned columns, two spaces apart, no trailing blanks. */

/** Formats `rows` under `headers`; every cell is one line. */
export function formatTable(headers: string[], rows: string[][]): string {
  const oneLine = (cell: string) => cell.replace(/\s*\n\s*/g, ' ');
  const all = [headers, ...rows].map((row) => row.map(oneLine));
  const widths = headers.map((_, column) => Math.max(...all.map((row) => (row[column] ?? '').length)));
  return all
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}

/** A duration for people: `850ms`, `12s`, `5m 3s`, `2h 4m`, `3d 1h`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1_000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** A byte count for people: `512 B`, `12.3 KiB`, `4.0 MiB`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}
