// One bench at a time per tree: two benches share the servers' ports, the
// output directory and the logs, so the second would measure the first's
// servers and both would overwrite each other's files. The lock is
// flock(2) on a file, taken by util-linux's flock(1) on a descriptor this
// process keeps open: the kernel drops it when the process ends, however
// it ends (a SIGKILL or a reboot leaves no stale lock to clean up). The
// descriptor is close-on-exec, so the servers a bench starts do not hold
// it. The file names its holder, for the message of the one refused.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

const CONFLICT = 75;   // flock's exit status when another holds the lock
const held = new Map();  // file -> descriptor, open until the process ends

// Takes the lock on file (made if missing) for the rest of this process
// and writes who holds it (`what`: the command line). Returns {ok: true};
// or, when another process holds it, {ok: false, holder: its line ("pid
// N since DATE: COMMAND", or '' while it is still starting)}. Throws when
// the lock cannot be tried at all (no flock, an unwritable directory).
export function takeLock(file, what = process.argv.slice(1).join(' ')) {
  if (held.has(file)) return { ok: true };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o644);
  const r = spawnSync('flock', ['--nonblock', '--conflict-exit-code', String(CONFLICT), '3'],
                      { stdio: ['ignore', 'ignore', 'pipe', fd], encoding: 'utf8' });
  if (r.status === 0) {
    fs.ftruncateSync(fd, 0);
    fs.writeSync(fd, `pid ${process.pid} since ${new Date().toISOString()}: ${what}\n`, 0);
    held.set(file, fd);
    return { ok: true };
  }
  const holder = fs.readFileSync(fd, 'utf8').trim();
  fs.closeSync(fd);
  if (r.status === CONFLICT) return { ok: false, holder };
  throw new Error(`cannot lock ${file}: flock: ${r.error ? r.error.message : (r.stderr || '').trim() || `exit ${r.status}`}`);
}

// The pid in a holder line of takeLock, or null.
export function holderPid(holder) {
  const m = /^pid (\d+)/.exec(holder || '');
  return m ? Number(m[1]) : null;
}
