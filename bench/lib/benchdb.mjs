// The bench's own tables: each experiment that loads or serves data does
// it in tables of its own (bench_NAME in every backend, NAME.sqlite in
// build/bench/tables), never in the tables `make run` and users serve. The
// same --set arguments go to the loader and the server.
import fs from 'node:fs';
import path from 'node:path';
import { run, background } from './run.mjs';
import { waitFor } from './http.mjs';

export const BACKENDS = ['sqlite', 'pg', 'innodb', 'myisam'];

// {backend: table} of the set NAME.
export function benchTables(name) {
  return { sqlite: `bench_${name}`, pg: `bench_${name}`, innodb: `bench_${name}_innodb`,
           myisam: `bench_${name}_myisam` };
}

const dir = ctx => path.resolve(ctx.work, 'tables');

export function benchSqlite(ctx, name) {
  fs.mkdirSync(dir(ctx), { recursive: true });
  return path.join(dir(ctx), `${name}.sqlite`);
}

// --set arguments that point the loader or the server at the set NAME.
export function benchSets(ctx, name) {
  const t = benchTables(name);
  return ['--set', `sqlite.path=${benchSqlite(ctx, name)}`,
          ...Object.entries(t).flatMap(([b, table]) => ['--set', `${b}.table=${table}`])];
}

// Loads the dataset into the set NAME of each backend; the ones that
// loaded. A load of the same dataset made earlier in this run is kept, and
// with --quick one made by an earlier run too (a stamp file per backend).
export async function loadBenchTables(ctx, name, backends) {
  fs.mkdirSync(dir(ctx), { recursive: true });
  ctx.benchLoaded ??= new Set();
  const avail = [], skipped = [];
  for (const b of backends) {
    const stamp = path.join(dir(ctx), `${name}.${b}.loaded`);
    const fresh = fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === ctx.dataset &&
                  fs.statSync(stamp).mtimeMs > fs.statSync(ctx.dataset).mtimeMs;
    if (fresh && (ctx.quick || ctx.benchLoaded.has(stamp))) {
      ctx.log(`load ${b}: kept from ${ctx.benchLoaded.has(stamp) ? 'earlier in this run' : 'an earlier run'} (${stamp})`);
      avail.push(b);
      continue;
    }
    fs.rmSync(stamp, { force: true });
    const r = await run(ctx.bin('loader'), ['-q', '--conf', ctx.conf, '--backend', b, '--mode', 'bulk',
                                            '--dataset', ctx.dataset, ...benchSets(ctx, name)], { log: ctx.logFile });
    if (r.code === 0) {
      avail.push(b);
      fs.writeFileSync(stamp, ctx.dataset);
      ctx.benchLoaded.add(stamp);
    } else {
      skipped.push(b);
      ctx.warn(`${name}: ${b} skipped: the load failed (is its database up?)`);
    }
  }
  return { avail, skipped };
}

// Starts build/bin/server on the set NAME and waits until /health says
// every backend is up; stopped at cleanup at the latest.
export async function startServer(ctx, name, port, backends, { log, extra = [], tls = null } = {}) {
  log ??= path.join(ctx.work, `server-${name}.log`);
  const tlsArgs = tls ? ['--tls-cert', tls.cert, '--tls-key', tls.key] : [];
  const srv = background(ctx.bin('server'), ['--conf', ctx.conf, '--port', String(port),
                                             '--backends', backends.join(','), ...benchSets(ctx, name),
                                             ...tlsArgs, ...extra],
                         { log });
  if (!(await waitFor(port, '/health', { alive: srv.alive, tls: !!tls })) || !srv.alive()) {
    await srv.stop();
    throw new Error(`the server did not start: see ${log}`);
  }
  return srv;
}
