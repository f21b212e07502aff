// The bench's own tables: each experiment that loads or serves data does
// it in tables of its own (bench_NAME in every backend, NAME.sqlite in
// build/bench/tables), never in the tables `make run` and users serve. The
// same --set arguments go to the loader and the server.
import fs from 'node:fs';
import path from 'node:path';
import { run, background } from './run.mjs';
import { waitFor } from './http.mjs';
import { describePid, listenerPids, listensOn } from './proc.mjs';

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
// every backend is up; stopped at cleanup at the latest. The server that
// answers must be the one started: one that already held the port (another
// bench's, a user's) answers /health too, while this one fails to listen.
export async function startServer(ctx, name, port, backends, { log, extra = [], tls = null } = {}) {
  log ??= path.join(ctx.work, `server-${name}.log`);
  const tlsArgs = tls ? ['--tls-cert', tls.cert, '--tls-key', tls.key] : [];
  const srv = background(ctx.bin('server'), ['--conf', ctx.conf, '--port', String(port),
                                             '--backends', backends.join(','), ...benchSets(ctx, name),
                                             ...tlsArgs, ...extra],
                         { log });
  const up = await waitFor(port, '/health', { alive: srv.alive, tls: !!tls });
  if (!up || !srv.alive() || !listensOn(srv.pid, port)) {
    const others = listenerPids(port).filter(p => p !== srv.pid);
    const answeredByOther = others.length > 0 || (up && srv.alive());   // one of another user's is not seen
    await srv.stop();
    if (answeredByOther)
      throw new Error(`the server did not start: 127.0.0.1:${port} is held by ` +
                      `${others.length ? others.map(describePid).join('; ') : 'another process'}, ` +
                      `not by the server started here (see ${log})`);
    throw new Error(`the server did not start: see ${log}`);
  }
  return srv;
}
