// Display helpers: times in the viewer's own time zone, durations and counts with their units.

export function clockTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || ms <= 0) return '–';
  return new Date(ms).toLocaleTimeString(undefined, { hour12: false });
}

export function dateTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || ms <= 0) return '–';
  return new Date(ms).toLocaleString(undefined, { hour12: false });
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function age(nowMs: number, thenMs: number): string {
  if (thenMs <= 0) return '–';
  return `${duration(Math.max(0, nowMs - thenMs))} ago`;
}

export function count(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined) return '–';
  return `${value.toLocaleString()} ${unit}`;
}

export function bytes(value: number): string {
  if (value <= 0) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let scaled = value;
  let unit = 0;
  while (scaled >= 1024 && unit < units.length - 1) {
    scaled /= 1024;
    unit += 1;
  }
  return `${scaled.toFixed(scaled >= 10 || unit === 0 ? 0 : 1)} ${units[unit]}`;
}
