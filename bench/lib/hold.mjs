// Idle keep-alive connections held open: what a server's memory per
// connection is measured with. Each connection sends one request, reads
// its whole answer, and then stays open doing nothing until close(). The
// connects go out a batch at a time, so that a listen backlog smaller than
// n does not drop SYNs (whose retry, a second later, would only slow the
// hold down).
import net from 'node:net';

// One GET on a new connection; resolves with the socket once the answer
// (its head and Content-Length body) is in, rejects on an error or after
// timeoutMs.
function oneRequest(port, path, host, timeoutMs) {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ port, host });
    let buf = Buffer.alloc(0), need = -1, status = 0;
    const fail = e => { sock.destroy(); reject(e); };
    const timer = setTimeout(() => fail(new Error(`no answer from ${host}:${port}${path} within ${timeoutMs} ms`)), timeoutMs);
    sock.setNoDelay(true);
    sock.on('error', e => { clearTimeout(timer); fail(e); });
    sock.on('connect', () => sock.write(`GET ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`));
    sock.on('data', d => {
      buf = Buffer.concat([buf, d]);
      if (need < 0) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        status = Number(head.split(' ')[1]);
        const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        need = end + 4 + (m ? Number(m[1]) : 0);
      }
      if (buf.length >= need) {
        clearTimeout(timer);
        sock.removeAllListeners('data');
        sock.on('data', () => {});
        sock.on('error', () => {});
        resolve({ sock, status });
      }
    });
  });
}

// n connections to 127.0.0.1:port, one GET of path (a function of the
// connection's number, or a string) each, then held idle: {statuses:
// {code: count}, seconds (to open them all and have every answer),
// close()}. Throws when a connection fails (the ones opened are closed).
export async function holdConnections({ port, path, n, host = '127.0.0.1', batch = 256, timeoutMs = 30000 }) {
  const socks = [];
  const statuses = {};
  const close = () => { for (const s of socks) s.destroy(); socks.length = 0; };
  const t0 = process.hrtime.bigint();
  try {
    for (let i = 0; i < n; i += batch) {
      const got = await Promise.allSettled(Array.from({ length: Math.min(batch, n - i) }, (_, k) =>
        oneRequest(port, typeof path === 'function' ? path(i + k) : path, host, timeoutMs)));
      for (const g of got.filter(x => x.status === 'fulfilled').map(x => x.value)) {
        socks.push(g.sock);
        statuses[g.status] = (statuses[g.status] || 0) + 1;
      }
      const bad = got.find(x => x.status === 'rejected');
      if (bad) throw new Error(`connection ${socks.length + 1} of ${n}: ${bad.reason.message}`);
    }
  } catch (e) {
    close();
    throw e;
  }
  return { statuses, seconds: Number(process.hrtime.bigint() - t0) / 1e9, close };
}
