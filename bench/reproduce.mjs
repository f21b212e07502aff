// ./zipbench reproduce: the answer's headline measured again on this
// machine, and held against the recorded one. It runs the calibration and
// the server experiment at c=10 only (every backend and strategy, nginx, the
// native clients: the same rounds and interval rules as a recording,
// within --budget), then prints for each rate and each same-round ratio
// the recorded figure, this machine's, now / recorded with its interval,
// and "carried" where the two intervals overlap; whether the ranking held;
// and the machine's own costs beside the recording machine's, which say
// why a ratio moved where it did (the model: lib/reproduction.mjs). The
// result is saved with its provenance (build/runs/, or with --record under
// docs/data/reproductions/, where the answer reads every machine's).
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { run, runMain } from './lib/run.mjs';
import { provenance, provenanceLine } from './lib/provenance.mjs';
import { compareAnswers, reproductionText } from './lib/reproduction.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);

const usage = `Usage: ./zipbench reproduce [OPTIONS]

Measures the answer's headline again on this machine and holds it against
the recorded one (docs/data/answer.json): every backend and strategy at
c=10, nginx and the native clients, in the same rounds and by the same
interval rules as the recording (scripts/bench --only calibrate,server at
c=10 alone), then, per rate and per same-round ratio: the recorded figure,
this machine's, now / recorded with its 95% interval, and "carried" where
the two intervals overlap; whether the ranking held; the machine's own
costs (fsync, round trip, spawn, wake-up, context switch, fork, a cache
miss, a connect per backend) beside the recording machine's, and which of
them a ratio that moved follows.

Options:
      --budget S     seconds of runs in all (default 600: about 10 minutes
                     with the calibration and the loads)
      --recorded DIR the recording to hold against (default docs: its
                     data/answer.json and data/calibrate.json)
      --out DIR      where the run's sections and data go (default
                     build/runs/reproduce-TIME)
      --record       also save the result as docs/data/reproductions/
                     DATE-COMMIT.json, where the answer reads every
                     machine's reproduction (commit it with the tree)
      --json FILE    the result as JSON (also saved beside --out)
  -h, --help         this text

Exit status: 0 when it ran (whatever carried), 1 when the measurement
failed, 2 on bad usage, 130 when interrupted.`;

function usageError(msg) {
  console.error(`zipbench reproduce: ${msg}\n(./zipbench reproduce --help)`);
  process.exit(2);
}

let args;
try {
  args = parseArgs({ options: {
    budget: { type: 'string', default: '600' }, recorded: { type: 'string', default: 'docs' },
    out: { type: 'string' }, record: { type: 'boolean' }, json: { type: 'string' },
    help: { type: 'boolean', short: 'h' } } }).values;
} catch (e) { usageError(e.message); }
if (args.help) { console.log(usage); process.exit(0); }
const budget = Number(args.budget);
if (!Number.isFinite(budget) || budget < 60) usageError(`--budget: '${args.budget}' is not a number of seconds, 60 or more`);
const readJSON = f => { try { return JSON.parse(fs.readFileSync(f, 'utf8')); } catch { return null; } };
const recorded = {
  answer: readJSON(path.join(args.recorded, 'data/answer.json')),
  calibrate: readJSON(path.join(args.recorded, 'data/calibrate.json')),
};
if (!recorded.answer) usageError(`--recorded: no ${path.join(args.recorded, 'data/answer.json')} to hold against`);

runMain('zipbench reproduce', async () => {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
  const out = args.out || path.join(process.env.ZB_RUNS || 'build/runs', `reproduce-${stamp}`);
  fs.mkdirSync(out, { recursive: true });
  const t0 = Date.now();
  const r = await run('scripts/bench', ['--only', 'calibrate,server', '--out', out, '--budget', String(budget)],
                      { env: { ZB_BENCH_SERVER_LEVELS: '10' }, inherit: true, timeoutS: budget * 4 + 1800 });
  const now = { answer: readJSON(path.join(out, 'data/answer.json')), calibrate: readJSON(path.join(out, 'data/calibrate.json')) };
  if (!now.answer) {
    console.error(`zipbench reproduce: the measurement made no ${out}/data/answer.json (scripts/bench exit ${r.code})`);
    return 1;
  }
  const result = { provenance: provenance(), seconds: Math.round((Date.now() - t0) / 1000), budget_s: budget,
                   ...compareAnswers(recorded, now) };
  console.log(reproductionText(result).join('\n'));
  const file = path.join(out, 'reproduction.json');
  fs.writeFileSync(file, JSON.stringify(result, null, 1) + '\n');
  console.log(`\nSaved: ${file}`);
  if (args.json) fs.writeFileSync(args.json, JSON.stringify(result, null, 1) + '\n');
  if (args.record) {
    const dir = 'docs/data/reproductions';
    fs.mkdirSync(dir, { recursive: true });
    const name = `${stamp.slice(0, 8)}-${(result.provenance.commit || 'unknown').slice(0, 7)}.json`;
    fs.writeFileSync(path.join(dir, name), JSON.stringify(result, null, 1) + '\n');
    console.log(`Recorded: ${path.join(dir, name)} (${provenanceLine(result.provenance)})`);
  }
  return 0;
});
