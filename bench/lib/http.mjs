// The one HTTP probe: a GET on loopback with its status and body (status 0
// when nothing answered), and a wait until a URL answers. tls: over HTTPS,
// the certificate not checked (the bench's own, self-signed).
import http from 'node:http';
import https from 'node:https';
import { isStopping } from './run.mjs';

export function get(port, path, { host = '127.0.0.1', timeoutMs = 5000, tls = false } = {}) {
  return new Promise(resolve => {
    const opts = { host, port, path, agent: false, timeout: timeoutMs, rejectUnauthorized: false };
    const req = (tls ? https : http).get(opts, res => {
      const chunks = [];
      res.on('data', c => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => resolve({ status: 0, body: '' }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, body: '' }));
  });
}

export async function status(port, path, opts) {
  return (await get(port, path, opts)).status;
}

// Polls until GET path answers `want` (any status when want is 0), up to
// timeoutS; alive() false stops early (the process died), and so does a
// signal that stops the driver (isStopping). true on success.
export async function waitFor(port, path, { want = 200, timeoutS = 30, alive = () => true, tls = false } = {}) {
  const end = Date.now() + timeoutS * 1000;
  while (Date.now() < end) {
    const s = await status(port, path, { timeoutMs: 2000, tls });
    if (want ? s === want : s > 0) return true;
    if (!alive() || isStopping()) return false;
    await new Promise(r => setTimeout(r, 100));
  }
  return false;
}

export async function getJSON(port, path) {
  const r = await get(port, path);
  try { return JSON.parse(r.body); } catch { return null; }
}
