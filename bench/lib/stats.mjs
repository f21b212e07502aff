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

// P(U <= u), u = 0 .. m*n, of the Mann-Whitney U of two samples of sizes m
// and n drawn from one distribution: the counts of U are the coefficients
// of the Gaussian binomial [m+n choose m](q), built one factor at a time
// ((1 - q^(n+i)) / (1 - q^i), which stays a polynomial with whole
// coefficients), then divided by C(m+n, m).
function mannWhitneyCdf(m, n) {
  const deg = m * n;
  let c = new Float64Array(deg + 1);
  c[0] = 1;
  for (let i = 1; i <= m; i++) {
    const next = new Float64Array(deg + 1);
    next.set(c);
    for (let k = deg; k >= n + i; k--) next[k] -= next[k - n - i];   // * (1 - q^(n+i))
    for (let k = i; k <= deg; k++) next[k] += next[k - i];           // / (1 - q^i)
    c = next;
  }
  const total = c.reduce((s, x) => s + x, 0);
  const cdf = new Float64Array(deg + 1);
  let run = 0;
  for (let u = 0; u <= deg; u++) cdf[u] = (run += c[u]) / total;
  return cdf;
}

// How many of the sorted pairwise differences to cut from each end for a
// two-sided interval of the given level: the largest k with P(U <= k-1)
// <= (1 - level)/2 (exact up to m*n = 40000, else the normal
// approximation of U); 0 when the samples are too small for any.
function pairwiseCut(m, n, level) {
  const half = (1 - level) / 2;
  if (m * n <= 40000) {
    const cdf = mannWhitneyCdf(m, n);
    let k = 0;
    while (k < m * n && cdf[k] <= half) k++;
    return k;
  }
  const z = normalQuantile(1 - half);
  return Math.max(0, Math.floor(m * n / 2 - z * Math.sqrt(m * n * (m + n + 1) / 12)));
}

// The standard normal's quantile (Acklam's rational approximation,
// relative error below 1.2e-9).
function normalQuantile(p) {
  const a = [-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.3577518672690, -30.66479806614716, 2.506628277459239];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
  const c = [-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const lo = 0.02425;
  if (p < lo) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - lo) return -normalQuantile(1 - p);
  const q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

// B against A for two sets of independent runs: the Hodges-Lehmann
// estimate of the ratio (the median of every pairwise ratio b/a) and its
// distribution-free confidence interval, the order statistics of those
// ratios that the Mann-Whitney U distribution gives (the ratios' logs are
// the pairwise differences of log values: a shift in log scale, B = r * A
// in distribution, is all it assumes). 0/0 counts as 1, x/0 as Infinity.
// {ratio, lo, hi, m, n}; lo and hi NaN when the runs are too few for the
// level (at 95%: 4 and 4 runs at least, or 3 and 5, or 2 and 8).
export function ratioCI(a, b, level = 0.95) {
  const xs = a.filter(Number.isFinite), ys = b.filter(Number.isFinite);
  const m = xs.length, n = ys.length;
  if (!m || !n) return { ratio: NaN, lo: NaN, hi: NaN, m, n };
  const r = [];
  for (const x of xs) for (const y of ys) r.push(x === 0 ? (y === 0 ? 1 : Infinity) : y / x);
  r.sort((p, q) => p - q);
  const k = pairwiseCut(m, n, level);
  return { ratio: median(r), lo: k ? r[k - 1] : NaN, hi: k ? r[m * n - k] : NaN, m, n };
}
