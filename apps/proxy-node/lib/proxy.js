'use strict';

// The event-loop proxy: one thread forwards every request without blocking, through a
// keep-alive agent of at most UPSTREAM_POOL_SIZE sockets (requests beyond it queue in the
// agent, up to UPSTREAM_POOL_TIMEOUT_MS, then 503).
//
// In-app timings (apps/README.md's contract) of a forwarded request with a B3 trace id:
// pool_wait_us is the wait for an upstream socket, query_us the upstream exchange (request
// out, whole body in), total_us from arrival until the handler hands the response to
// Node (res.end).

const crypto = require('node:crypto');
const http = require('node:http');
const https = require('node:https');
const { TimingsBuffer, UnixMicroClock, traceIdFromHeaders } = require('./timings');

// Hop-by-hop headers (RFC 9110 7.6.1) and the ones set here: not forwarded either way.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization',
  'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length']);
// The largest upstream body buffered; a bigger one is a 502.
const MAX_BODY = 16 << 20;
const TIMINGS = '/_cfbench/timings';
const NEEDS_TOKEN = 'timings need the bearer token of CFBENCH_TIMINGS_TOKEN';

class Failure extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function send(res, status, json, headers) {
  const body = Buffer.from(json);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.length, ...headers });
  res.end(body);
}

function error(message) {
  return JSON.stringify({ error: message });
}

// createProxy(cfg) → { server, agent, timings }: an http.Server not yet listening.
function createProxy(cfg) {
  const mod = cfg.upstream.protocol === 'https:' ? https : http;
  const agent = new mod.Agent({ keepAlive: true, maxSockets: cfg.poolSize, maxFreeSockets: cfg.poolSize, scheduling: 'lifo' });
  const timings = new TimingsBuffer(cfg.timingsCapacity, cfg.timingsOn);
  const clock = new UnixMicroClock();
  const expectedAuth = cfg.timingsToken === null ? null : Buffer.from('Bearer ' + cfg.timingsToken);
  const basePath = cfg.upstream.pathname.replace(/\/$/, '');
  const target = {
    host: cfg.connectHost ?? cfg.upstream.hostname,
    port: cfg.connectPort ?? (cfg.upstream.port || (mod === https ? 443 : 80)),
    servername: mod === https ? cfg.upstream.hostname : undefined,
  };

  function authorized(req) {
    if (expectedAuth === null) return true;
    const got = req.headers.authorization;
    if (typeof got !== 'string') return false;
    const buf = Buffer.from(got);
    return buf.length === expectedAuth.length && crypto.timingSafeEqual(buf, expectedAuth);
  }

  function timingsEndpoint(req, res, path) {
    const action = path.slice(TIMINGS.length);
    if (!['', '/start', '/stop', '/flush'].includes(action)) return send(res, 404, error('not found'));
    const method = action === '' ? 'GET' : 'POST';
    if (req.method !== method) return send(res, 405, error('method not allowed'), { Allow: method });
    if (!authorized(req)) return send(res, 401, error(NEEDS_TOKEN));
    if (action === '/flush') return send(res, 200, timings.flushJson(cfg.instanceIndex));
    if (action === '/start') timings.recording = true;
    if (action === '/stop') timings.recording = false;
    return send(res, 200, timings.statusJson());
  }

  function forward(req, res, begin, url) {
    const traceId = timings.recording ? traceIdFromHeaders(req.headers) : null;
    const seq = traceId === null ? 0 : timings.arrival();
    const headers = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k)) headers[k] = v;
    headers.host = cfg.upstream.host;
    const sent = process.hrtime.bigint();
    let assigned = 0n;
    let done = false;
    const up = mod.request({ ...target, agent, method: 'GET', path: basePath + url, headers, timeout: cfg.upstreamTimeoutMs });
    const poolTimer = setTimeout(() => {
      up.destroy(new Failure(503, `no upstream connection free within ${cfg.poolTimeoutMs} ms (UPSTREAM_POOL_SIZE ${cfg.poolSize})`));
    }, cfg.poolTimeoutMs);
    const fail = (err) => {
      clearTimeout(poolTimer);
      if (done) return;
      done = true;
      if (res.headersSent) return res.destroy();
      send(res, err instanceof Failure ? err.status : 502, error(err instanceof Failure ? err.message : `upstream: ${err.message}`));
    };
    up.once('socket', () => {
      assigned = process.hrtime.bigint();
      clearTimeout(poolTimer);
    });
    up.on('timeout', () => up.destroy(new Failure(504, `upstream did not answer within ${cfg.upstreamTimeoutMs} ms`)));
    up.on('error', fail);
    up.on('response', (ur) => {
      const chunks = [];
      let size = 0;
      ur.on('data', (c) => {
        size += c.length;
        if (size > MAX_BODY) {
          up.destroy(new Failure(502, `upstream: body over ${MAX_BODY} bytes`));
          return;
        }
        chunks.push(c);
      });
      ur.on('error', fail);
      ur.on('aborted', () => fail(new Failure(502, 'upstream: the answer was cut off')));
      ur.on('end', () => {
        if (done) return;
        done = true;
        const answered = process.hrtime.bigint();
        const body = Buffer.concat(chunks, size);
        const out = [];
        const raw = ur.rawHeaders;
        for (let i = 0; i < raw.length; i += 2) {
          const k = raw[i].toLowerCase();
          if (!HOP_BY_HOP.has(k) && k !== 'date') out.push(raw[i], raw[i + 1]);
        }
        out.push('Content-Length', String(body.length));
        res.writeHead(ur.statusCode, out);
        let handed = 0n;
        if (traceId !== null) {
          // Kept once the answer is written completely (a failed write leaves no row).
          res.once('finish', () => {
            timings.add(traceId, seq, clock.at(begin), Number(assigned - sent), Number(answered - assigned), Number(handed - begin));
          });
        }
        handed = process.hrtime.bigint(); // before the write: see "total_us" in apps/README.md
        res.end(body);
      });
    });
    // A client that went away needs no answer: free the upstream socket's turn.
    res.once('close', () => {
      if (!done) {
        done = true;
        clearTimeout(poolTimer);
        up.destroy();
      }
    });
    up.end();
  }

  function onRequest(req, res) {
    const begin = process.hrtime.bigint();
    const url = req.url;
    if (!url.startsWith('/')) return send(res, 400, error('request target must be a path'));
    const qi = url.indexOf('?');
    const path = qi < 0 ? url : url.slice(0, qi);
    if (path === '/healthz') {
      if (req.method !== 'GET') return send(res, 405, error('method not allowed'), { Allow: 'GET' });
      return send(res, 200, '{"status":"ok"}');
    }
    if (path === TIMINGS || path.startsWith(TIMINGS + '/')) return timingsEndpoint(req, res, path);
    if (req.method !== 'GET') return send(res, 405, error('method not allowed'), { Allow: 'GET' });
    return forward(req, res, begin, url);
  }

  const server = http.createServer(onRequest);
  // Longer than a router keeps an idle connection to an app, so that the router, not the
  // app, closes it: a close racing a reused connection would fail that request.
  server.keepAliveTimeout = 65000;
  server.headersTimeout = 66000;
  return { server, agent, timings };
}

module.exports = { createProxy, HOP_BY_HOP, MAX_BODY };
