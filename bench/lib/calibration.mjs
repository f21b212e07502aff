// The machine's own costs (experiments/calibrate.mjs writes them to
// DIR/data/calibrate.json), and the sentence each experiment prints to say
// which of them explains its figures.
import fs from 'node:fs';
import path from 'node:path';

export function loadCalibration(ctx) {
  try { return JSON.parse(fs.readFileSync(path.join(ctx.out, 'data/calibrate.json'), 'utf8')); }
  catch { return null; }
}

const us = x => (x >= 1000 ? `${(x / 1000).toFixed(2)} ms` : `${x.toFixed(x < 10 ? 1 : 0)} µs`);

// What explains an experiment's figures, in numbers of this machine.
const reasons = {
  load: c => c.fsync_us &&
    `Calibration: autocommit loads commit, and so flush the log, once per row: one fdatasync of ` +
    `an 8 kB write costs ${us(c.fsync_us)} here, so no durable autocommit load can pass ` +
    `${Math.round(1e6 / c.fsync_us)} rows/s on this file system; SQLite (in WAL mode, as the loader ` +
    `writes it), PostgreSQL and InnoDB flush once per commit (or fewer, grouping commits).`,
  server: c => c.connect_us &&
    `Calibration: a per-request lookup pays one connection setup (here PostgreSQL ` +
    `${us(c.connect_us.pg || NaN)}, MariaDB ${us(c.connect_us.innodb || NaN)}, SQLite open ` +
    `${us(c.connect_us.sqlite || NaN)}) on top of the query; a pooled lookup pays the loopback ` +
    `round trips (${us(c.tcp_rtt_us || NaN)} each) of HTTP and of the database protocol, and is ` +
    `measured against nginx serving a static file (${us(c.nginx_us || NaN)} per keep-alive request at c 1).`,
  php: c => c.connect_us &&
    `Calibration: PHP's per-request mode pays a connection setup (PostgreSQL ` +
    `${us(c.connect_us.pg || NaN)}, MariaDB ${us(c.connect_us.innodb || NaN)}) per request like the ` +
    `server's; Apache's prefork processes are spawned once (a spawn costs ${us(c.spawn_us || NaN)} here), ` +
    `so persistent PHP pays the interpreter per request, not a process.`,
  sql: c => c.fsync_us &&
    `Calibration: a separate (autocommit) transaction costs at least one flush (fdatasync ` +
    `${us(c.fsync_us)} here) where the setting is durable; the file-system rows pay it once per ` +
    `file with tmp + rename + fsync, and not at all when written plainly.`,
  as3ap: c => c.fsync_us &&
    `Calibration: the single-user queries are CPU and cache bound (no flush); the multi-user ` +
    `updates commit one by one, so with a durable setting each pays a flush (fdatasync ` +
    `${us(c.fsync_us)} here) unless commits are grouped: that is what the second setting changes.`,
  loadgen: c => c.nginx_us &&
    `Calibration: one keep-alive request to nginx at c 1 takes ${us(c.nginx_us)} here, about ` +
    `${c.tcp_rtt_us ? (c.nginx_us / c.tcp_rtt_us).toFixed(1) : '?'} loopback TCP round trips ` +
    `(${us(c.tcp_rtt_us || NaN)}); without keep-alive each request also sets up a TCP connection.`,
};

export function explain(ctx, part) {
  const c = loadCalibration(ctx);
  if (!c) return 'Calibration: not run (`scripts/bench --only calibrate`).';
  return (reasons[part] && reasons[part](c)) || '';
}
