'use strict';

// The in-app timings endpoints against a real Postgres (DATABASE_URL).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { lockDatabase, startApp, databaseUrl } = require('../test-support/helpers');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function traceId(i) {
  return 'feed' + i.toString(16).padStart(28, '0');
}

function traced(id) {
  return { headers: { 'X-B3-TraceId': id } };
}

// Polls cond() until it is true (the response's 'finish' may come a moment after the
// client has read it); fails after 20 s.
async function waitFor(what, cond) {
  for (let i = 0; i < 2000; i++) {
    if (await cond()) return;
    await sleep(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function status(srv, headers) {
  const r = await srv.request('/_cfbench/timings', { headers });
  assert.equal(r.status, 200);
  return r.json;
}

async function flush(srv, headers) {
  const r = await srv.request('/_cfbench/timings/flush', { method: 'POST', headers });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/json');
  return r;
}

function checkRow(row, notBeforeUs, notAfterUs) {
  assert.equal(row.length, 5);
  const [id, at, poolWait, query, total] = row;
  assert.match(id, /^[0-9a-f]{32}$/);
  for (const v of [at, poolWait, query, total]) assert.ok(Number.isInteger(v) && v >= 0, `${row}`);
  assert.ok(total >= poolWait + query, `total < pool_wait + query: ${row}`);
  assert.ok(at >= notBeforeUs && at <= notAfterUs, `at ${at} outside [${notBeforeUs}, ${notAfterUs}]`);
}

// Without DATABASE_URL this fails with the reason (and the tests below are cancelled).
test('DATABASE_URL names the Postgres to test against', () => {
  databaseUrl();
});

describe('in-app timings', () => {
  let lock;

  before(async () => {
    databaseUrl();
    lock = await lockDatabase();
  });

  after(async () => {
    if (lock) await lock.release();
  });

  test('off by default: nothing recorded until start', async () => {
    const srv = await startApp();
    try {
      assert.deepEqual(await status(srv), { recording: false, capacity: 100000, buffered: 0, dropped: 0 });
      assert.equal((await srv.request('/ads/1', traced(traceId(1)))).status, 200);
      assert.equal((await srv.request('/ads', traced(traceId(2)))).status, 200);
      await sleep(50);
      let r = await srv.request('/_cfbench/timings');
      assert.equal(r.text, '{"recording":false,"capacity":100000,"buffered":0,"dropped":0}');
      r = await flush(srv);
      assert.equal(r.text, '{"instance_index":0,"capacity":100000,"dropped":0,"rows":[]}');

      r = await srv.request('/_cfbench/timings/start', { method: 'POST' });
      assert.equal(r.status, 200);
      assert.equal(r.text, '{"recording":true,"capacity":100000,"buffered":0,"dropped":0}');
      assert.equal((await srv.request('/ads/1', traced(traceId(3)))).status, 200);
      await waitFor('one row', async () => (await status(srv)).buffered === 1);
      r = await srv.request('/_cfbench/timings/stop', { method: 'POST' });
      assert.equal(r.text, '{"recording":false,"capacity":100000,"buffered":1,"dropped":0}');
      assert.equal((await srv.request('/ads/1', traced(traceId(4)))).status, 200);
      await sleep(50);
      const flushed = (await flush(srv)).json;
      assert.deepEqual(flushed.rows.map((row) => row[0]), [traceId(3)]);
    } finally {
      await srv.close();
    }
  });

  test('recording: which requests count, rows in order, then empty', async () => {
    const srv = await startApp({ CFBENCH_TIMINGS: 'on', CF_INSTANCE_INDEX: '3' });
    try {
      const t0 = Date.now() * 1000;
      const a = '463ac35c9f6413ad48485a3953bb6124';
      const b = 'a3ce929d0e0e4736';
      const c = '80f198ee56343ba864fe8b2a57d3eff7';
      const d = '0af7651916cd43dd8448eb211c80319c';
      const e = 'ABCDEF0123456789abcdef0123456789';
      let r = await srv.request('/ads/1', traced(a));
      assert.equal(r.status, 200);
      r = await srv.request('/ads?limit=5', { headers: { 'x-b3-traceid': b, 'x-b3-spanid': 'e457b5a2e4d86bd1' } });
      assert.equal(r.status, 200);
      r = await srv.request('/ads', {
        method: 'POST',
        headers: { b3: `${c}-e457b5a2e4d86bd1-1`, 'Content-Type': 'application/json' },
        body: '{"title":"traced"}',
      });
      assert.equal(r.status, 201);
      r = await srv.request('/ads/abc', traced(d)); // no database access
      assert.equal(r.status, 400);
      r = await srv.request('/ads/2', traced(e));
      assert.equal(r.status, 200);
      // not recorded: malformed, missing, other paths
      for (const [path, headers] of [
        ['/ads/1', { 'X-B3-TraceId': 'not-a-trace-id' }],
        ['/ads/1', { 'X-B3-TraceId': a.slice(0, 20) }],
        ['/ads/1', { b3: 'nonsense' }],
        ['/ads/1', { b3: '1' }],
        ['/ads/1', {}],
        ['/health', { 'X-B3-TraceId': traceId(90) }],
        ['/nope', { 'X-B3-TraceId': traceId(91) }],
        ['/_cfbench/timings', { 'X-B3-TraceId': traceId(92) }],
      ]) {
        assert.notEqual((await srv.request(path, { headers })).status, 0);
      }
      await waitFor('five rows', async () => (await status(srv)).buffered >= 5);
      await sleep(50);
      assert.deepEqual(await status(srv), { recording: true, capacity: 100000, buffered: 5, dropped: 0 });

      r = await flush(srv);
      const t1 = Date.now() * 1000;
      const flushed = r.json;
      assert.deepEqual(Object.keys(flushed), ['instance_index', 'capacity', 'dropped', 'rows']);
      assert.equal(flushed.instance_index, 3);
      assert.equal(flushed.capacity, 100000);
      assert.equal(flushed.dropped, 0);
      assert.deepEqual(
        flushed.rows.map((row) => row[0]),
        [a, '0000000000000000' + b, c, d, e.toLowerCase()]
      );
      let lastAt = 0;
      for (const row of flushed.rows) {
        checkRow(row, t0 - 1000000, t1 + 1000000);
        assert.ok(row[1] >= lastAt, 'rows in arrival order');
        lastAt = row[1];
      }
      const bad = flushed.rows[3];
      assert.equal(bad[2], 0, 'no pool wait without database access');
      assert.equal(bad[3], 0, 'no query time without database access');
      assert.match(r.text, /^\{"instance_index":3,"capacity":100000,"dropped":0,"rows":\[\["463ac35c9f6413ad48485a3953bb6124",\d+,\d+,\d+,\d+\],/);

      r = await flush(srv);
      assert.equal(r.text, '{"instance_index":3,"capacity":100000,"dropped":0,"rows":[]}');
      assert.deepEqual(await status(srv), { recording: true, capacity: 100000, buffered: 0, dropped: 0 });
    } finally {
      await srv.close();
    }
  });

  test('rows are listed in arrival order, not completion order', async () => {
    const srv = await startApp({ CFBENCH_TIMINGS: 'on', DB_POOL_SIZE: '1', DB_POOL_TIMEOUT_MS: '30000' });
    try {
      const held = await srv.app.pool.connect();
      let slow;
      try {
        slow = srv.request('/ads/1', traced(traceId(1))); // waits for the held connection
        await waitFor('the request to wait for a connection', () => srv.app.pool.waitingCount === 1);
        const fast = await srv.request('/ads/x', traced(traceId(2)));
        assert.equal(fast.status, 400);
        await waitFor('the fast row', async () => (await status(srv)).buffered === 1);
      } finally {
        held.release();
      }
      assert.equal((await slow).status, 200);
      await waitFor('both rows', async () => (await status(srv)).buffered === 2);
      const rows = (await flush(srv)).json.rows;
      assert.deepEqual(rows.map((row) => row[0]), [traceId(1), traceId(2)]);
      assert.ok(rows[0][1] <= rows[1][1]);
      const now = Date.now() * 1000;
      for (const row of rows) checkRow(row, now - 60000000, now + 1000000);
    } finally {
      await srv.close();
    }
  });

  test('capacity 3: three kept, the rest dropped, both cleared by flush', async () => {
    const srv = await startApp({ CFBENCH_TIMINGS: 'on', CFBENCH_TIMINGS_CAPACITY: '3' });
    try {
      for (let i = 1; i <= 5; i++) {
        assert.equal((await srv.request(`/ads/${i}`, traced(traceId(i)))).status, 200);
      }
      await waitFor('five finished requests', async () => {
        const s = await status(srv);
        return s.buffered + s.dropped === 5;
      });
      assert.deepEqual(await status(srv), { recording: true, capacity: 3, buffered: 3, dropped: 2 });
      const flushed = (await flush(srv)).json;
      assert.equal(flushed.capacity, 3);
      assert.equal(flushed.dropped, 2);
      assert.deepEqual(flushed.rows.map((row) => row[0]), [traceId(1), traceId(2), traceId(3)]);
      assert.deepEqual(await status(srv), { recording: true, capacity: 3, buffered: 0, dropped: 0 });
      assert.equal((await srv.request('/ads/6', traced(traceId(6)))).status, 200);
      await waitFor('a row after the flush', async () => (await status(srv)).buffered === 1);
      assert.deepEqual((await flush(srv)).json.rows.map((row) => row[0]), [traceId(6)]);
    } finally {
      await srv.close();
    }
  });

  test('the bearer token of CFBENCH_TIMINGS_TOKEN', async () => {
    const srv = await startApp({ CFBENCH_TIMINGS: 'on', CFBENCH_TIMINGS_TOKEN: 's3cret' });
    const endpoints = [
      ['GET', '/_cfbench/timings'],
      ['POST', '/_cfbench/timings/start'],
      ['POST', '/_cfbench/timings/stop'],
      ['POST', '/_cfbench/timings/flush'],
    ];
    try {
      for (const [method, path] of endpoints) {
        for (const headers of [{}, { Authorization: 'Bearer wrong' }, { Authorization: 's3cret' }, { Authorization: 'Bearer s3cret2' }]) {
          const r = await srv.request(path, { method, headers });
          assert.equal(r.status, 401, `${method} ${path} ${JSON.stringify(headers)}`);
          assert.equal(r.text, '{"error":"timings need the bearer token of CFBENCH_TIMINGS_TOKEN"}');
        }
      }
      const auth = { Authorization: 'Bearer s3cret' };
      for (const [method, path] of endpoints) {
        const r = await srv.request(path, { method, headers: auth });
        assert.equal(r.status, 200, `${method} ${path}`);
      }
      // the app's own endpoints want no token
      assert.equal((await srv.request('/ads/1')).status, 200);
      assert.equal((await srv.request('/health')).status, 200);
    } finally {
      await srv.close();
    }
  });

  test('concurrent requests while flushing: every row exactly once', async () => {
    const srv = await startApp({ CFBENCH_TIMINGS: 'on', DB_POOL_TIMEOUT_MS: '60000' });
    const n = 200;
    try {
      const seen = new Map();
      let nonEmptyFlushes = 0;
      const collect = async () => {
        const flushed = (await flush(srv)).json;
        assert.equal(flushed.dropped, 0);
        if (flushed.rows.length > 0) nonEmptyFlushes++;
        for (const row of flushed.rows) {
          checkRow(row, 0, Date.now() * 1000 + 1000000);
          seen.set(row[0], (seen.get(row[0]) || 0) + 1);
        }
      };
      // Two flushers run all along, while the requests go out in waves of ten.
      let done = false;
      const flusher = async () => {
        while (!done) await collect();
      };
      const flushers = Promise.all([flusher(), flusher()]);
      const requests = [];
      try {
        for (let i = 0; i < n; i++) {
          const path = i % 4 === 3 ? '/ads?limit=3' : `/ads/${(i % 100) + 1}`;
          requests.push(srv.request(path, traced(traceId(1000 + i))));
          if (i % 10 === 9) await sleep(2);
        }
        for (const r of await Promise.all(requests)) assert.equal(r.status, 200);
      } finally {
        done = true;
        await flushers;
      }
      await waitFor('every row', async () => {
        await collect();
        let total = 0;
        for (const count of seen.values()) total += count;
        return total >= n;
      });
      await sleep(50);
      await collect();
      assert.ok(nonEmptyFlushes >= 1);
      assert.equal(seen.size, n);
      for (let i = 0; i < n; i++) assert.equal(seen.get(traceId(1000 + i)), 1, traceId(1000 + i));
      assert.deepEqual(await status(srv), { recording: true, capacity: 100000, buffered: 0, dropped: 0 });
    } finally {
      await srv.close();
    }
  });
});
