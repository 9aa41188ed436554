'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { start } = require('../server');
const { fromEnv, ConfigError } = require('../lib/config');

// An upstream on loopback that records what it got: each request's socket, Host, path and
// headers, and the most requests it held at once. GET /slow?ms=N answers after N ms.
function upstream() {
  const seen = { sockets: new Set(), requests: [], inFlight: 0, maxInFlight: 0 };
  let nextSocket = 0;
  const server = http.createServer((req, res) => {
    if (req.socket.id === undefined) req.socket.id = nextSocket++;
    seen.sockets.add(req.socket.id);
    seen.requests.push({ host: req.headers.host, url: req.url, headers: req.headers });
    seen.inFlight++;
    seen.maxInFlight = Math.max(seen.maxInFlight, seen.inFlight);
    const u = new URL(req.url, 'http://x');
    const finish = (status, body, headers) => {
      seen.inFlight--;
      res.writeHead(status, { 'X-Upstream': 'yes', Connection: 'keep-alive', 'Keep-Alive': 'timeout=60', ...headers });
      res.end(body);
    };
    if (u.pathname === '/slow') setTimeout(() => finish(200, 'slow'), Number(u.searchParams.get('ms')));
    else if (u.pathname === '/missing') finish(404, 'nope', { 'Content-Type': 'text/plain' });
    else finish(200, 'x'.repeat(Number(u.searchParams.get('size') || 10)), { 'Content-Type': 'text/plain' });
  });
  server.keepAliveTimeout = 60000;
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, seen, port: server.address().port })));
}

// get(port, path, headers) → { status, headers, body } over a fresh connection.
function get(port, p, headers = {}, method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method, headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

let up;
const apps = [];
async function proxy(env) {
  const app = await start({ PORT: '0', UPSTREAM_URL: `http://127.0.0.1:${up.port}`, ...env });
  apps.push(app);
  return app;
}

before(async () => {
  up = await upstream();
});
after(() => {
  for (const a of apps) {
    a.agent.destroy();
    a.server.close();
    a.server.closeAllConnections();
  }
  up.server.close();
  up.server.closeAllConnections();
});

test('forwards GET with status, body and end-to-end headers; hop-by-hop ones stay behind', async () => {
  const app = await proxy({});
  const r = await get(app.port, '/bytes?size=10240', { 'X-B3-TraceId': 'ab'.repeat(16), Connection: 'close', 'Proxy-Authorization': 'x' });
  assert.equal(r.status, 200);
  assert.equal(r.body.length, 10240);
  assert.equal(r.headers['x-upstream'], 'yes');
  assert.equal(r.headers['content-length'], '10240');
  assert.equal(r.headers['keep-alive'], undefined, 'the upstream hop-by-hop Keep-Alive is not passed back');
  const got = up.seen.requests.at(-1);
  assert.equal(got.url, '/bytes?size=10240');
  assert.equal(got.host, `127.0.0.1:${up.port}`);
  assert.equal(got.headers['x-b3-traceid'], 'ab'.repeat(16));
  assert.equal(got.headers['proxy-authorization'], undefined);
  const miss = await get(app.port, '/missing');
  assert.deepEqual([miss.status, miss.body], [404, 'nope']);
});

test('a base path in UPSTREAM_URL goes in front; CONNECT_TO dials elsewhere with the upstream Host', async () => {
  const app = await proxy({ UPSTREAM_URL: 'http://stub.apps.localhost/base/', CONNECT_TO: `127.0.0.1:${up.port}` });
  const r = await get(app.port, '/hello?a=1');
  assert.equal(r.status, 200);
  const got = up.seen.requests.at(-1);
  assert.deepEqual([got.url, got.host], ['/base/hello?a=1', 'stub.apps.localhost']);
});

test('at most UPSTREAM_POOL_SIZE upstream requests at once, on kept-alive connections', async () => {
  const app = await proxy({ UPSTREAM_POOL_SIZE: '2' });
  const before = new Set(up.seen.sockets);
  up.seen.maxInFlight = 0;
  for (let round = 0; round < 3; round++) {
    const rs = await Promise.all(Array.from({ length: 8 }, () => get(app.port, '/slow?ms=20')));
    assert.deepEqual(rs.map((r) => r.status), Array(8).fill(200));
  }
  const opened = [...up.seen.sockets].filter((s) => !before.has(s));
  assert.ok(up.seen.maxInFlight >= 1 && up.seen.maxInFlight <= 2, `upstream requests at once: ${up.seen.maxInFlight}`);
  assert.ok(opened.length >= 1 && opened.length <= 2, `24 requests over ${opened.length} connections, want 2 at most, reused`);
});

test('no connection free within UPSTREAM_POOL_TIMEOUT_MS is a 503; a slow upstream a 504; none a 502', async () => {
  const app = await proxy({ UPSTREAM_POOL_SIZE: '1', UPSTREAM_POOL_TIMEOUT_MS: '50' });
  const inFlight = up.seen.inFlight;
  const holding = get(app.port, '/slow?ms=2000');
  while (up.seen.inFlight === inFlight) await new Promise((resolve) => setTimeout(resolve, 5));
  const waited = await get(app.port, '/slow?ms=1'); // the one connection is busy for 2 s
  assert.equal(waited.status, 503);
  assert.equal((await holding).status, 200);
  assert.match(JSON.parse(waited.body).error, /no upstream connection free within 50 ms \(UPSTREAM_POOL_SIZE 1\)/);
  const after = await get(app.port, '/hello');
  assert.equal(after.status, 200, 'the pool works on after a request gave up waiting');

  const slow = await proxy({ UPSTREAM_TIMEOUT_MS: '50' });
  const r = await get(slow.port, '/slow?ms=3000');
  assert.equal(r.status, 504);

  const closed = http.createServer();
  await new Promise((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const deadPort = closed.address().port;
  await new Promise((resolve) => closed.close(resolve));
  const dead = await proxy({ UPSTREAM_URL: `http://127.0.0.1:${deadPort}` });
  const d = await get(dead.port, '/hello');
  assert.equal(d.status, 502);
  assert.match(JSON.parse(d.body).error, /^upstream: .*ECONNREFUSED/);
});

test('/healthz is answered, not forwarded; other methods are 405', async () => {
  const app = await proxy({});
  const n = up.seen.requests.length;
  const h = await get(app.port, '/healthz');
  assert.deepEqual([h.status, h.body], [200, '{"status":"ok"}']);
  const p = await get(app.port, '/hello', {}, 'POST');
  assert.deepEqual([p.status, p.headers.allow], [405, 'GET']);
  assert.equal(up.seen.requests.length, n);
});

test('in-app timings: one row per traced request, nested, behind the token', async () => {
  const app = await proxy({ CFBENCH_TIMINGS: 'on', CFBENCH_TIMINGS_TOKEN: 'sesame', CF_INSTANCE_INDEX: '3' });
  const auth = { Authorization: 'Bearer sesame' };
  assert.equal((await get(app.port, '/_cfbench/timings/flush', {}, 'POST')).status, 401);
  assert.equal((await get(app.port, '/_cfbench/timings/flush', { Authorization: 'Bearer nope' }, 'POST')).status, 401);
  await get(app.port, '/slow?ms=30', { 'X-B3-TraceId': '0123456789abcdef' });
  await get(app.port, '/hello', { b3: 'fedcba9876543210fedcba9876543210-0123456789abcdef-1' });
  await get(app.port, '/hello'); // no trace id: no row
  await get(app.port, '/healthz', { 'X-B3-TraceId': '1111111111111111' }); // not forwarded: no row
  const status = JSON.parse((await get(app.port, '/_cfbench/timings', auth)).body);
  assert.deepEqual(status, { recording: true, capacity: 100000, buffered: 2, dropped: 0 });
  const f = JSON.parse((await get(app.port, '/_cfbench/timings/flush', auth, 'POST')).body);
  assert.equal(f.instance_index, 3);
  assert.deepEqual(f.rows.map((r) => r[0]), ['00000000000000000123456789abcdef', 'fedcba9876543210fedcba9876543210']);
  const [slow] = f.rows;
  const [, at, poolWait, upstreamUs, total] = slow;
  assert.ok(Math.abs(at - Date.now() * 1000) < 60e6, `at ${at} is a Unix time in microseconds`);
  assert.ok(upstreamUs >= 30000, `the upstream held it 30 ms: query_us ${upstreamUs}`);
  assert.ok(poolWait + upstreamUs <= total, `pool wait ${poolWait} + upstream ${upstreamUs} within total ${total}`);
  assert.equal(JSON.parse((await get(app.port, '/_cfbench/timings/flush', auth, 'POST')).body).rows.length, 0);
  await get(app.port, '/_cfbench/timings/stop', auth, 'POST');
  await get(app.port, '/hello', { 'X-B3-TraceId': '0123456789abcdef' });
  assert.equal(JSON.parse((await get(app.port, '/_cfbench/timings', auth)).body).buffered, 0, 'not recording after stop');
});

test('a bad environment is one clear line and exit 1', () => {
  const cases = [
    [{}, 'no upstream: set UPSTREAM_URL'],
    [{ UPSTREAM_URL: 'ftp://x' }, 'UPSTREAM_URL must be http(s)://host[:port][/base-path], not "ftp://x"'],
    [{ UPSTREAM_URL: 'http://s', PORT: 'eighty' }, 'PORT must be an integer from 0 to 65535, not "eighty"'],
    [{ UPSTREAM_URL: 'http://s', UPSTREAM_POOL_SIZE: '0' }, 'UPSTREAM_POOL_SIZE must be an integer from 1 to 10000, not "0"'],
    [{ UPSTREAM_URL: 'https://s', CONNECT_TO: '127.0.0.1:1' }, 'CONNECT_TO needs an http:// UPSTREAM_URL'],
    [{ UPSTREAM_URL: 'http://s', CONNECT_TO: 'router' }, 'CONNECT_TO must be host:port, not "router"'],
    [{ UPSTREAM_URL: 'http://s', VCAP_APPLICATION: '{"uris":' }, 'VCAP_APPLICATION is not JSON'],
    [{ UPSTREAM_URL: 'http://proxy.apps.example.com', VCAP_APPLICATION: '{"uris":["proxy.apps.example.com"]}' },
      "UPSTREAM_URL http://proxy.apps.example.com/ is this app's own route"],
  ];
  for (const [env, want] of cases) {
    assert.throws(() => fromEnv(env), (err) => err instanceof ConfigError && err.message.startsWith(want), JSON.stringify(env));
  }
  assert.equal(fromEnv({ UPSTREAM_URL: 'http://s', VCAP_APPLICATION: '{"application_name":"px","uris":["px.a"]}' }).appName, 'px');
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'server.js')], { env: { PATH: process.env.PATH }, encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, 'proxy-node: no upstream: set UPSTREAM_URL (e.g. http://stub.apps.example.com)\n');
});
