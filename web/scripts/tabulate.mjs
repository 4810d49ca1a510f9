// Small helpers shared by the scripts that tabulate lab results as Markdown.

/** Milliseconds as seconds with two decimals; '–' for none. */
export const s2 = (ms) => (ms == null ? '–' : (ms / 1000).toFixed(2));

/** The median of the finite values of v; null when there are none. */
export function median(v) {
  const s = v.filter(Number.isFinite).sort((a, b) => a - b);
  if (!s.length) return null;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
