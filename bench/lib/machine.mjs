// The machine and the versions of everything measured, for report
// headers. Programs are found by full path (/usr/sbin is not on a normal
// user's PATH), so the header is whole whoever runs it.
import fs from 'node:fs';
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import { nproc } from './proc.mjs';

function out(cmd, args) {
  try {
    const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 10000 });
    if (r.error) return '';
    return (r.stdout + r.stderr).trim();
  } catch { return ''; }
}

// The first of the paths that exists (globs of one '*' segment allowed).
export function findProgram(...candidates) {
  for (const c of candidates) {
    if (!c.includes('*')) {
      if (c.includes('/') ? fs.existsSync(c) : spawnSync('sh', ['-c', `command -v ${c}`]).status === 0) return c;
      continue;
    }
    const [dir, rest] = c.split('*');
    const parent = dir.slice(0, dir.lastIndexOf('/') + 1);
    const prefix = dir.slice(parent.length);
    let names = [];
    try { names = fs.readdirSync(parent).filter(n => n.startsWith(prefix)); } catch { continue; }
    names.sort((a, b) => b.localeCompare(a, undefined, { numeric: true }));
    for (const n of names) if (fs.existsSync(parent + n + rest)) return parent + n + rest;
  }
  return null;
}

export const programs = {
  postgres: () => findProgram('/usr/lib/postgresql/*/bin/postgres'),
  pgbench: () => findProgram('/usr/lib/postgresql/*/bin/pgbench', 'pgbench'),
  pgTestFsync: () => findProgram('/usr/lib/postgresql/*/bin/pg_test_fsync'),
  mariadbd: () => findProgram('/usr/sbin/mariadbd', '/usr/sbin/mysqld'),
  nginx: () => findProgram('/usr/sbin/nginx', 'nginx'),
  apache2: () => findProgram('/usr/sbin/apache2', 'apache2'),
  php: () => findProgram('/usr/bin/php', 'php'),
  ab: () => findProgram('/usr/bin/ab', 'ab'),
  wrk: () => findProgram('/usr/bin/wrk', 'wrk'),
  pkgConfig: () => findProgram('/usr/bin/pkg-config', 'pkg-config'),
};

function pkg(name) { const p = programs.pkgConfig(); return p ? out(p, ['--modversion', name]) : ''; }

// The machine as fields: {cpu (the model), cores, mem_gib, kernel ("Linux
// 6.1.0-18-amd64 x86_64", as uname -srm), os, hostname}.
export function machineInfo() {
  const read = f => { try { return fs.readFileSync(f, 'utf8'); } catch { return ''; } };
  const cpu = (read('/proc/cpuinfo').match(/^model name\s*:\s*(.*)$/m) || [])[1] || os.machine?.() || '?';
  const osName = (read('/etc/os-release').match(/^PRETTY_NAME="?([^"\n]*)"?/m) || [])[1] || '?';
  return { cpu, cores: nproc(), mem_gib: Math.round(os.totalmem() / 2 ** 30),
           kernel: `${os.type()} ${os.release()} ${os.machine ? os.machine() : process.arch}`, os: osName,
           hostname: os.hostname() };
}

export function machineLine(m = machineInfo()) {
  return `${m.cores} cores (${m.cpu}), ${m.mem_gib} GiB, ${m.kernel}, ${m.os}`;
}

export function versions() {
  const v = {};
  v.sqlite = 'SQLite ' + (pkg('sqlite3') || '?');
  const pg = programs.postgres();
  v.pg = pg ? out(pg, ['--version']).replace(/^postgres \(PostgreSQL\) /, 'PostgreSQL ') : 'PostgreSQL: not found';
  const my = programs.mariadbd();
  const myv = my ? (out(my, ['--version']).match(/Ver ([\w.]+)/) || [])[1] : null;
  v.mariadb = my ? `MariaDB ${myv || '?'}` : 'MariaDB: not found';
  v.mhd = 'libmicrohttpd ' + (pkg('libmicrohttpd') || '?');
  v.apr = 'APR ' + (pkg('apr-1') || '?');
  const ng = programs.nginx();
  v.nginx = ng ? out(ng, ['-v']).replace(/^nginx version: /, '') : 'nginx: not found';
  const ap = programs.apache2();
  v.apache = ap ? (out(ap, ['-v']).match(/Server version: (\S+)/) || [])[1] || '?' : 'apache2: not found';
  const php = programs.php();
  v.php = ((php && out(php, ['-v']).split('\n')[0]) || 'php: not found').replace(/ \(built.*/, '');
  v.ab = (out(programs.ab() || 'ab', ['-V']).match(/ApacheBench, Version (\S+)/) || [])[1];
  v.ab = v.ab ? 'ab ' + v.ab : 'ab: not found';
  v.wrk = (out(programs.wrk() || 'wrk', ['-v']).match(/wrk (\S+)/) || [])[1];
  v.wrk = v.wrk ? 'wrk ' + v.wrk : 'wrk: not found';
  v.node = 'Node ' + process.version;
  return v;
}
