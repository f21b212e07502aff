// The servers an experiment needs, through the project's own lifecycle
// scripts (scripts/db, scripts/nginx, scripts/apache: bash owns starting
// and stopping). What the driver starts, it stops at cleanup, even when an
// experiment fails; what was already running is left running.
import path from 'node:path';
import { run, atCleanup } from './run.mjs';
import { pidInFile } from './proc.mjs';

// The port of an experiment's own server: ZB_BENCH_<PART>_PORT, else
// ZB_BENCH_PORT (18280) + offset, so that moving ZB_BENCH_PORT moves every
// port the bench listens on (README.md's table); part null: ZB_BENCH_PORT.
export function benchPort(part, offset = 0) {
  const base = Number(process.env.ZB_BENCH_PORT || 18280) + offset;
  return Number((part && process.env[`ZB_BENCH_${part}_PORT`]) || base);
}

async function script(ctx, name, args) {
  const r = await run(path.join(ctx.root, 'scripts', name), args, { log: ctx.logFile, timeoutS: 300 });
  return r;
}

// The databases: started if down, and then stopped at the end.
export async function databases(ctx) {
  if (ctx.dbChecked) return;
  ctx.dbChecked = true;
  const st = await script(ctx, 'db', ['status']);
  if (st.code === 0) return;
  const r = await script(ctx, 'db', ['start']);
  if (r.code !== 0) throw new Error(`scripts/db start failed: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  atCleanup(() => script(ctx, 'db', ['stop']));
}

// Variables for clients (psql, pgbench, mariadb): `scripts/db env`.
export async function dbEnv(ctx) {
  if (ctx.dbEnvCache) return ctx.dbEnvCache;
  const r = await script(ctx, 'db', ['env']);
  const env = {};
  for (const m of r.stdout.matchAll(/^export (\w+)=(.*)$/gm))
    env[m[1]] = m[2].replace(/^'(.*)'$/, '$1').replace(/\\(.)/g, '$1');
  ctx.dbEnvCache = env;
  return env;
}

// The pid files of a script's daemons, as it says (`scripts/NAME pidfile
// [WHICH]`), asked once per script and WHICH: the scripts are the one
// place that knows them.
export async function pidFiles(ctx, name, which) {
  ctx.pidFileCache ||= {};
  const key = which ? `${name} ${which}` : name;
  if (ctx.pidFileCache[key]) return ctx.pidFileCache[key];
  const r = await script(ctx, name, which ? ['pidfile', which] : ['pidfile']);
  if (r.code !== 0) throw new Error(`scripts/${name} pidfile failed: ${r.stderr.trim()}`);
  return (ctx.pidFileCache[key] = r.stdout.split('\n').filter(Boolean));
}

// The server processes, for CPU accounting: {pg, mariadb} pids (0 if down).
export async function dbPids(ctx) {
  const [pg] = await pidFiles(ctx, 'db', 'pg');
  const [mariadb] = await pidFiles(ctx, 'db', 'mariadb');
  return { pg: pidInFile(pg), mariadb: pidInFile(mariadb) };
}

// Every daemon's pid file that the project's scripts start: the
// databases, nginx, Apache, PHP-FPM and its nginx, the poolers.
export async function daemonPidFiles(ctx) {
  const all = [];
  for (const name of ['db', 'nginx', 'apache', 'php-fpm', 'pooler']) all.push(...await pidFiles(ctx, name));
  return all;
}

// The project's nginx (scripts/nginx): {port, html}; files dropped in html
// are served too.
export async function nginx(ctx) {
  if (ctx.nginxInfo) return ctx.nginxInfo;
  let st = await script(ctx, 'nginx', ['status']);
  if (st.code !== 0) {
    st = await script(ctx, 'nginx', ['start']);
    if (st.code !== 0) throw new Error(`scripts/nginx start failed: ${st.stderr.trim()}`);
    atCleanup(async () => { await script(ctx, 'nginx', ['stop']); ctx.nginxInfo = null; });
  }
  const m = st.stdout.match(/127\.0\.0\.1:(\d+)/);
  if (!m) throw new Error(`scripts/nginx: no port in "${st.stdout.trim()}"`);
  const build = path.isAbsolute(ctx.build) ? ctx.build : path.join(ctx.root, ctx.build);
  const [pidFile] = await pidFiles(ctx, 'nginx');
  ctx.nginxInfo = { port: Number(m[1]), html: path.join(build, 'nginx/html'), pidFile };
  return ctx.nginxInfo;
}

// The project's Apache + mod_php (scripts/apache); stopped at cleanup
// whenever it was started here.
export const apache = {
  async restart(ctx, env) {
    if (!ctx.apacheCleanup) ctx.apacheCleanup = atCleanup(() => this.stop(ctx));
    const r = await run(path.join(ctx.root, 'scripts/apache'), ['restart'],
                        { env, log: ctx.logFile, timeoutS: 300 });
    if (r.code !== 0) throw new Error(`scripts/apache restart failed: ${(r.stderr || r.stdout).trim()}`);
    const m = r.stdout.match(/127\.0\.0\.1:(\d+)/g);
    return m ? Number(m[m.length - 1].split(':')[1]) : 0;
  },
  async stop(ctx) {
    await script(ctx, 'apache', ['stop']);
  },
};

// The project's nginx + PHP-FPM (scripts/php-fpm), the same page as
// Apache's: {port, children}; stopped at cleanup whenever started here.
export const phpFpm = {
  async restart(ctx, env) {
    if (!ctx.fpmCleanup) ctx.fpmCleanup = atCleanup(() => this.stop(ctx, env));
    const r = await run(path.join(ctx.root, 'scripts/php-fpm'), ['restart'],
                        { env, log: ctx.logFile, timeoutS: 300 });
    if (r.code !== 0) throw new Error(`scripts/php-fpm restart failed: ${(r.stderr || r.stdout).trim()}`);
    const port = r.stdout.match(/127\.0\.0\.1:(\d+)/), kids = r.stdout.match(/(\d+) static children/);
    return { port: port ? Number(port[1]) : 0, children: kids ? Number(kids[1]) : 0 };
  },
  async stop(ctx, env) {
    await run(path.join(ctx.root, 'scripts/php-fpm'), ['stop'], { env, log: ctx.logFile, timeoutS: 300 });
  },
};

// The poolers (scripts/pooler: pgbouncer, pgpool-II) on loopback, started
// if down (with env, e.g. ZB_PGPOOL_CHILDREN) and then stopped at the end.
export async function poolers(ctx, env = {}) {
  if ((await script(ctx, 'pooler', ['status'])).code === 0) return;
  const r = await run(path.join(ctx.root, 'scripts/pooler'), ['start'], { env, log: ctx.logFile, timeoutS: 300 });
  if (r.code !== 0) throw new Error(`scripts/pooler start failed: ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ')}`);
  atCleanup(() => script(ctx, 'pooler', ['stop']));
}
