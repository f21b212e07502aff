// Where a run's wall time goes, and how far it is: `zipbench run` times
// each kind of work (the measured runs, their warm-ups, the host probes,
// the loads, the server starts: Cells adds the first three to spent), and
// on a terminal keeps one line up to date on stderr: runs made of all,
// time elapsed and left, the cell being measured. Not on a terminal (a
// pipe, a log, a test) it writes nothing: the report is the output.
const PARTS = [['runs', 'the measured runs'], ['warmups', 'warm-ups'], ['probes', 'host probes'],
  ['loads', 'loading'], ['starts', 'server starts']];

// m:ss (or h:mm:ss) of seconds.
export function clock(s) {
  const t = Math.max(0, Math.round(s)), h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, sec = t % 60;
  return `${h ? `${h}:${String(m).padStart(2, '0')}` : m}:${String(sec).padStart(2, '0')}`;
}

export class Progress {
  // stream: where the line goes (stderr); tty: whether to draw it
  // (stream.isTTY unless told).
  constructor({ stream = process.stderr, tty = stream.isTTY } = {}) {
    this.stream = stream;
    this.tty = !!tty;
    this.t0 = Date.now();
    this.spent = {};            // seconds per part; Cells adds runs, warmups, probes
    this.measureStart = null;
    this.shown = false;
  }

  // fn's seconds added to part ('loads', 'starts').
  async time(part, fn) {
    const t0 = Date.now();
    try { return await fn(); } finally { this.spent[part] = (this.spent[part] || 0) + (Date.now() - t0) / 1000; }
  }

  // The line for the run about to start: {key, done, total} as Cells gives it.
  update({ key, done, total }) {
    if (!this.tty) return;
    if (this.measureStart === null) this.measureStart = Date.now();
    const elapsed = (Date.now() - this.t0) / 1000, inMeasure = (Date.now() - this.measureStart) / 1000;
    const left = done > 0 ? ` ~${clock(inMeasure / done * (total - done))} left` : ' estimating what is left';
    let line = `  ${done}/${total} runs, ${clock(elapsed)} elapsed,${left}: ${key}`;
    const width = this.stream.columns || 80;
    if (line.length >= width) line = line.slice(0, width - 2) + '…';
    this.stream.write(`\r\x1b[K${line}`);
    this.shown = true;
  }

  // The line taken away before the report is printed.
  clear() {
    if (this.shown) this.stream.write('\r\x1b[K');
    this.shown = false;
  }

  // Where the wall time went, and, when it is more than twice the
  // measured seconds, which parts made it so, each with its count and
  // time apiece (Cells counts them: spent.counts), and what would
  // shorten it.
  breakdown() {
    const wall = (Date.now() - this.t0) / 1000;
    const measured = this.spent.runs || 0;
    const counts = this.spent.counts || {};
    const parts = PARTS.map(([k, what]) => ({ k, what, s: this.spent[k] || 0 })).filter(p => p.s >= 0.05);
    const other = wall - parts.reduce((a, p) => a + p.s, 0);
    const text = [`Where the ${wall.toFixed(0)} s went: ` +
      [...parts, { what: 'the rest (the driver, its reports)', s: Math.max(0, other) }]
        .map(p => `${p.what} ${p.s.toFixed(1)} s`).join(', ') + '.'];
    if (measured > 0 && wall > 2 * measured) {
      const big = parts.filter(p => p.k !== 'runs' && p.s > 0.1 * wall).sort((a, b) => b.s - a.s);
      const each = p => (counts[p.k] ? ` (${counts[p.k]}, ${(p.s / counts[p.k]).toFixed(2)} s each)` : '');
      const why = { probes: 'a probe times its loops on every CPU, and they run slowly while other work holds the CPU',
                    warmups: 'each run follows a warm-up at its concurrency' };
      text.push(`That is ${(wall / measured).toFixed(1)} times the measured seconds` +
        (big.length ? `: ${big.map(p => `${p.what} ${p.s.toFixed(1)} s${each(p)}`).join(', ')}` : '') +
        (big.some(p => why[p.k]) ? ` (${big.filter(p => why[p.k]).map(p => why[p.k]).join('; ')})` : '') +
        '. A longer --duration spreads them over more measured seconds; a quieter machine shortens the probes.');
    }
    return text.join('\n');
  }
}
