// The one median, and how sure it is: a distribution-free 95% confidence
// interval of the median from order statistics (the binomial method: the
// number of runs below the true median is Binomial(n, 1/2)), so no
// assumption about the shape of the run-to-run noise.

export function sorted(xs) {
  return [...xs].sort((a, b) => a - b);
}

// The median; the mean of the two middle values for an even count.
export function median(xs) {
  if (!xs.length) return NaN;
  const s = sorted(xs);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// P(Binomial(n, 1/2) <= k)
function binomCdfHalf(n, k) {
  let term = Math.pow(0.5, n), sum = 0;
  for (let i = 0; i <= k; i++) {
    sum += term;
    term = term * (n - i) / (i + 1);
  }
  return sum;
}

// The interval [x(k), x(n-k+1)] (1-based order statistics) that covers the
// median with probability >= level: the largest k with P(B < k) <= alpha/2.
// null when n is too small for any such interval (n < 6 at 95%).
export function medianCI(xs, level = 0.95) {
  const n = xs.length;
  const alpha = 1 - level;
  let k = 0;
  while (k + 1 <= n / 2 && binomCdfHalf(n, k) <= alpha / 2) k++;
  if (k === 0) return null;
  const s = sorted(xs);
  return { lo: s[k - 1], hi: s[n - k] };
}

// Median, interval, range and whether the interval lies within
// +-target of the median (the stopping rule of a cell).
export function summarize(xs, target = 0.05) {
  const m = median(xs);
  const ci = medianCI(xs);
  const s = sorted(xs);
  const within = !!ci && m > 0 && ci.lo >= m * (1 - target) && ci.hi <= m * (1 + target);
  return {
    n: xs.length, median: m, lo: ci ? ci.lo : NaN, hi: ci ? ci.hi : NaN,
    min: s[0], max: s[s.length - 1], within,
    // the interval's wider side, as a share of the median
    halfWidth: ci && m ? Math.max(m - ci.lo, ci.hi - m) / m : NaN,
  };
}

export function ratio(a, b) {
  return a > 0 && b > 0 ? a / b : NaN;
}

export function sum(xs) {
  return xs.reduce((a, b) => a + b, 0);
}
