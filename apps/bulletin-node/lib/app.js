'use strict';

// The bulletin board: an http server over a pg pool, per ../README.md's contract.

const http = require('node:http');
const crypto = require('node:crypto');
const { Client, Pool } = require('pg');
const { dbConfigFromEnv, settingsFromEnv } = require('./config');
const { TimingsBuffer, UnixMicroClock, traceIdFromHeaders } = require('./timings');

const MAX_BODY = 64 * 1024;
const MAX_BIGINT = 9223372036854775807n;
const ADVISORY_LOCK = 727272;

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS ads (
    id         bigserial PRIMARY KEY,
    title      text        NOT NULL,
    text       text        NOT NULL DEFAULT '',
    price      integer     NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
)`;
const SEED = `INSERT INTO ads (title, text, price)
SELECT 'Ad ' || n, 'Seed advertisement ' || n, n * 10
FROM generate_series(1, $1::integer) AS n
ORDER BY n`;

const COLUMNS = 'id, title, text, price, created_at';
const LIST = {
  name: 'bulletin_list',
  text: `SELECT ${COLUMNS} FROM ads ORDER BY id DESC LIMIT $1`,
};
const LIST_BEFORE = {
  name: 'bulletin_list_before',
  text: `SELECT ${COLUMNS} FROM ads WHERE id < $1::bigint ORDER BY id DESC LIMIT $2`,
};
const GET = {
  name: 'bulletin_get',
  text: `SELECT ${COLUMNS} FROM ads WHERE id = $1::bigint`,
};
const CREATE = {
  name: 'bulletin_create',
  text: `INSERT INTO ads (title, text, price) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`,
};

// SELECT pg_sleep on the request's pooled connection before its query (sleep_ms): a
// slow query that holds the connection, bounded.
const SLEEP = { name: 'bulletin_sleep', text: 'SELECT pg_sleep($1::float8)' };
const MAX_SLEEP_MS = 10000;

const NOT_FOUND = '{"error":"not found"}';
const METHOD_NOT_ALLOWED = '{"error":"method not allowed"}';
const DB_UNAVAILABLE = '{"error":"database unavailable"}';
const BODY_TOO_LARGE = '{"error":"body too large"}';
const NEEDS_TOKEN = '{"error":"timings need the bearer token of CFBENCH_TIMINGS_TOKEN"}';
const HEALTH_OK = '{"status":"ok"}';

// A failure of the database (connecting, pool timeout, a statement): answered with 503.
class DbError extends Error {
  constructor(cause) {
    super(cause && cause.message ? cause.message : String(cause));
    this.cause = cause;
  }
}

function errorJson(message) {
  return '{"error":' + JSON.stringify(message) + '}';
}

// pg returns int8 as a string of digits: emitted as is, it is the exact JSON number.
function adJson(row) {
  return (
    '{"id":' +
    row.id +
    ',"title":' +
    JSON.stringify(row.title) +
    ',"text":' +
    JSON.stringify(row.text) +
    ',"price":' +
    row.price +
    ',"created_at":"' +
    row.created_at.toISOString() +
    '"}'
  );
}

function send(res, status, body, headers) {
  if (res.headersSent || res.destroyed) return;
  const h = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
  if (headers) Object.assign(h, headers);
  res.writeHead(status, h);
  res.end(body);
}

// A positive integer of digits only, at most 2^63-1 → its canonical decimal string; else null.
function positiveBigint(s) {
  if (s === null || !/^[0-9]+$/.test(s)) return null;
  const n = BigInt(s);
  if (n < 1n || n > MAX_BIGINT) return null;
  return n.toString();
}

// The request body, at most MAX_BODY bytes: resolves to a Buffer, or null when too large.
function readBody(req) {
  return new Promise((resolve, reject) => {
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > MAX_BODY) {
      resolve(null);
      return;
    }
    const chunks = [];
    let size = 0;
    let done = false;
    const finish = (value, err) => {
      if (done) return;
      done = true;
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.removeListener('error', onError);
      req.removeListener('close', onClose);
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        finish(null);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish(Buffer.concat(chunks, size));
    const onError = (err) => finish(undefined, err);
    const onClose = () => {
      if (!req.complete) finish(undefined, new Error('request aborted'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

// The fields of a POST /ads body, or {error} naming the first wrong one.
function validateAd(body) {
  let obj;
  try {
    obj = JSON.parse(body.toString('utf8'));
  } catch {
    return { error: 'body must be a JSON object' };
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    return { error: 'body must be a JSON object' };
  }
  const { title } = obj;
  if (typeof title !== 'string' || title.length < 1 || title.length > 200) {
    return { error: 'title must be a string of 1 to 200 characters' };
  }
  let text = '';
  if (obj.text !== undefined) {
    if (typeof obj.text !== 'string' || obj.text.length > 4000) {
      return { error: 'text must be a string of at most 4000 characters' };
    }
    text = obj.text;
  }
  let price = 0;
  if (obj.price !== undefined) {
    const p = obj.price;
    if (typeof p !== 'number' || !Number.isInteger(p) || p < 0 || p > 1000000000) {
      return { error: 'price must be an integer from 0 to 1000000000' };
    }
    price = p === 0 ? 0 : p; // no -0
  }
  return { title, text, price };
}

// The sleep_ms parameter of params: 0 when absent, null when not an integer from 0 to
// MAX_SLEEP_MS.
function sleepMs(params) {
  const s = params.get('sleep_ms');
  if (s === null) return 0;
  if (!/^[0-9]+$/.test(s) || Number(s) > MAX_SLEEP_MS) return null;
  return Number(s);
}

const BAD_SLEEP = errorJson(`sleep_ms must be an integer from 0 to ${MAX_SLEEP_MS}`);

function oneLine(err) {
  if (err && Array.isArray(err.errors) && err.errors.length > 0) {
    return err.errors.map((e) => (e && e.message) || String(e)).join('; ');
  }
  const msg = (err && (err.message || err.code)) || String(err);
  return msg.replace(/\s+/g, ' ').trim();
}

// How long the start waits for its database connection to be made. DB_POOL_TIMEOUT_MS
// bounds a request's wait for a pooled connection (a knob of the benchmark, 5 s by
// default); a busy host can take longer for a first connection, and the platform gives
// a start far more (Cloud Foundry's health check: 60 s by default). A refused or failed
// connection still fails the start at once.
const START_CONNECT_MS = 30000;

function createApp(env = process.env) {
  const settings = settingsFromEnv(env);
  const db = dbConfigFromEnv(env);
  const conn = { host: db.host, port: db.port, database: db.database, user: db.user, password: db.password, ssl: db.ssl };
  const pool = new Pool({ ...conn, max: settings.poolSize, connectionTimeoutMillis: settings.poolTimeoutMs });
  pool.on('error', (err) => {
    process.stderr.write(`bulletin-node: idle database connection failed: ${oneLine(err)}\n`);
  });
  const timings = new TimingsBuffer(settings.timingsCapacity, settings.timingsOn);
  const clock = new UnixMicroClock();
  const expectedAuth = settings.timingsToken === null ? null : Buffer.from('Bearer ' + settings.timingsToken);

  // Runs fn(query) on a pooled client, timing the wait for it and every statement.
  async function withClient(ctx, fn) {
    const t0 = process.hrtime.bigint();
    let client;
    try {
      client = await pool.connect();
    } catch (err) {
      throw new DbError(err);
    } finally {
      ctx.poolWaitNs += Number(process.hrtime.bigint() - t0);
    }
    let failed = false;
    const query = async (q, values) => {
      const t = process.hrtime.bigint();
      try {
        return await client.query({ name: q.name, text: q.text, values });
      } catch (err) {
        failed = true;
        throw new DbError(err);
      } finally {
        ctx.queryNs += Number(process.hrtime.bigint() - t);
      }
    };
    try {
      return await fn(query);
    } finally {
      client.release(failed);
    }
  }

  async function listAds(ctx, res, query) {
    const params = new URLSearchParams(query);
    let limit = 20;
    const l = params.get('limit');
    if (l !== null) {
      if (!/^[0-9]+$/.test(l) || Number(l) < 1 || Number(l) > 100) {
        send(res, 400, errorJson('limit must be an integer from 1 to 100'));
        return;
      }
      limit = Number(l);
    }
    let before = null;
    const b = params.get('before');
    if (b !== null) {
      before = positiveBigint(b);
      if (before === null) {
        send(res, 400, errorJson('before must be a positive integer'));
        return;
      }
    }
    const sleep = sleepMs(params);
    if (sleep === null) {
      send(res, 400, BAD_SLEEP);
      return;
    }
    const result = await withClient(ctx, async (q) => {
      if (sleep > 0) await q(SLEEP, [sleep / 1000]);
      return before === null ? q(LIST, [limit]) : q(LIST_BEFORE, [before, limit]);
    });
    const rows = result.rows;
    const next = rows.length === limit ? rows[rows.length - 1].id : 'null';
    send(res, 200, '{"ads":[' + rows.map(adJson).join(',') + '],"next":' + next + '}');
  }

  async function getAd(ctx, res, idText, query) {
    const id = positiveBigint(idText);
    if (id === null) {
      send(res, 400, errorJson('id must be a positive integer'));
      return;
    }
    const sleep = sleepMs(new URLSearchParams(query));
    if (sleep === null) {
      send(res, 400, BAD_SLEEP);
      return;
    }
    const result = await withClient(ctx, async (q) => {
      if (sleep > 0) await q(SLEEP, [sleep / 1000]);
      return q(GET, [id]);
    });
    if (result.rows.length === 0) {
      send(res, 404, errorJson(`ad ${id} not found`));
      return;
    }
    send(res, 200, adJson(result.rows[0]));
  }

  async function createAd(ctx, req, res) {
    const body = await readBody(req);
    if (body === null) {
      send(res, 413, BODY_TOO_LARGE);
      req.resume(); // discard the rest, keeping the connection usable
      return;
    }
    const ad = validateAd(body);
    if (ad.error) {
      send(res, 400, errorJson(ad.error));
      return;
    }
    const result = await withClient(ctx, (q) => q(CREATE, [ad.title, ad.text, ad.price]));
    const row = result.rows[0];
    send(res, 201, adJson(row), { Location: '/ads/' + row.id });
  }

  function authorized(req) {
    if (expectedAuth === null) return true;
    const got = req.headers.authorization;
    if (typeof got !== 'string') return false;
    const buf = Buffer.from(got);
    return buf.length === expectedAuth.length && crypto.timingSafeEqual(buf, expectedAuth);
  }

  function timingsEndpoint(req, res, action) {
    if (!authorized(req)) {
      send(res, 401, NEEDS_TOKEN);
      return;
    }
    if (action === 'flush') {
      // Snapshot and reset in one synchronous step, before anything is written.
      send(res, 200, timings.flushJson(settings.instanceIndex));
      return;
    }
    if (action === 'start') timings.recording = true;
    else if (action === 'stop') timings.recording = false;
    send(res, 200, timings.statusJson());
  }

  async function route(req, res, ctx, path, query) {
    const method = req.method;
    if (path === '/ads') {
      if (method === 'GET') return listAds(ctx, res, query);
      if (method === 'POST') return createAd(ctx, req, res);
      return send(res, 405, METHOD_NOT_ALLOWED, { Allow: 'GET, POST' });
    }
    if (path.startsWith('/ads/') && path.indexOf('/', 5) < 0) {
      if (method === 'GET') return getAd(ctx, res, path.slice(5), query);
      return send(res, 405, METHOD_NOT_ALLOWED, { Allow: 'GET' });
    }
    if (path === '/health') {
      if (method === 'GET') return send(res, 200, HEALTH_OK);
      return send(res, 405, METHOD_NOT_ALLOWED, { Allow: 'GET' });
    }
    if (path === '/_cfbench/timings') {
      if (method === 'GET') return timingsEndpoint(req, res, 'status');
      return send(res, 405, METHOD_NOT_ALLOWED, { Allow: 'GET' });
    }
    if (path === '/_cfbench/timings/start' || path === '/_cfbench/timings/stop' || path === '/_cfbench/timings/flush') {
      if (method === 'POST') return timingsEndpoint(req, res, path.slice('/_cfbench/timings/'.length));
      return send(res, 405, METHOD_NOT_ALLOWED, { Allow: 'POST' });
    }
    return send(res, 404, NOT_FOUND);
  }

  function onRequest(req, res) {
    const t0 = process.hrtime.bigint();
    const url = req.url;
    const qi = url.indexOf('?');
    const path = qi < 0 ? url : url.slice(0, qi);
    const query = qi < 0 ? '' : url.slice(qi + 1);
    const ctx = { poolWaitNs: 0, queryNs: 0 };
    if (timings.recording && (path === '/ads' || path.startsWith('/ads/'))) {
      const traceId = traceIdFromHeaders(req.headers);
      if (traceId !== null) {
        const seq = timings.arrival();
        const at = clock.at(t0);
        // total ends when the handler hands the whole response to Node (res.end), not
        // at 'finish': that event waits for the event loop, which may first take the
        // next request of the same connection, and would count its time here.
        let endNs = 0n;
        const end = res.end;
        res.end = function endTimed(...args) {
          endNs = process.hrtime.bigint();
          return end.apply(this, args);
        };
        res.once('finish', () => {
          timings.add(traceId, seq, at, ctx.poolWaitNs, ctx.queryNs, Number((endNs || process.hrtime.bigint()) - t0));
        });
      }
    }
    route(req, res, ctx, path, query).catch((err) => {
      if (err instanceof DbError) {
        send(res, 503, DB_UNAVAILABLE);
        return;
      }
      if (err && err.message === 'request aborted') {
        res.destroy();
        return;
      }
      process.stderr.write(`bulletin-node: ${req.method} ${path} failed: ${oneLine(err)}\n`);
      send(res, 500, errorJson('internal error'));
    });
  }

  const server = http.createServer(onRequest);
  // Longer than the idle timeout of the routers' connection pools (gorouter: 90 s), so
  // the app never closes a kept-alive connection a router is about to reuse.
  server.keepAliveTimeout = 120000;
  server.headersTimeout = 125000;

  // Creates the table and seeds it when empty, under the advisory lock so that
  // instances starting together seed once. It has a connection of its own, bounded by
  // START_CONNECT_MS rather than a request's pool wait.
  async function init() {
    const client = new Client({ ...conn, connectionTimeoutMillis: START_CONNECT_MS });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [ADVISORY_LOCK]);
      await client.query(CREATE_TABLE);
      const { rows } = await client.query('SELECT EXISTS (SELECT 1 FROM ads) AS seeded');
      if (!rows[0].seeded && settings.seedAds > 0) await client.query(SEED, [settings.seedAds]);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      await client.end().catch(() => {});
    }
  }

  function listen(port = settings.port, host) {
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.removeListener('error', reject);
        resolve(server.address().port);
      });
    });
  }

  async function close() {
    await new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    await pool.end();
  }

  return { settings, db, server, pool, timings, init, listen, close };
}

// Creates the app, prepares the database and listens on PORT; logs one line.
async function start(env = process.env, log = (line) => process.stdout.write(line + '\n')) {
  const app = createApp(env);
  await app.init();
  const port = await app.listen();
  const s = app.settings;
  log(
    `bulletin-node listening on port ${port} (db pool ${s.poolSize}, timings ${s.timingsOn ? 'on' : 'off'}, ` +
      `capacity ${s.timingsCapacity})`
  );
  return app;
}

module.exports = { createApp, start, validateAd, positiveBigint, sleepMs, oneLine };
