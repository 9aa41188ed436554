'use strict';

// The HTTP contract of ../../README.md against a real Postgres (DATABASE_URL).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { lockDatabase, startApp, databaseUrl, warmPool } = require('../test-support/helpers');
const { createApp } = require('../server');

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function seedAd(n) {
  return { id: n, title: `Ad ${n}`, text: `Seed advertisement ${n}`, price: n * 10 };
}

function withoutCreatedAt(ad) {
  assert.match(ad.created_at, ISO_MS);
  const { created_at, ...rest } = ad; // eslint-disable-line no-unused-vars
  return rest;
}

function range(from, downTo) {
  const ids = [];
  for (let i = from; i >= downTo; i--) ids.push(i);
  return ids;
}

// Without DATABASE_URL this fails with the reason (and the tests below are cancelled).
test('DATABASE_URL names the Postgres to test against', () => {
  databaseUrl();
});

describe('bulletin board', () => {
  let lock;
  let srv;

  before(async () => {
    databaseUrl();
    lock = await lockDatabase();
    await lock.client.query('DROP TABLE IF EXISTS ads');
    srv = await startApp({ DB_POOL_SIZE: '4', DB_POOL_TIMEOUT_MS: '30000' });
  });

  after(async () => {
    if (srv) await srv.close();
    if (lock) await lock.release();
  });

  describe('seeding', () => {
    test('a fresh table holds ads 1..100 in order', async () => {
      const { rows } = await lock.client.query(
        'SELECT id, title, text, price FROM ads ORDER BY id'
      );
      assert.equal(rows.length, 100);
      rows.forEach((r, i) => {
        const n = i + 1;
        assert.deepEqual({ id: Number(r.id), title: r.title, text: r.text, price: r.price }, seedAd(n));
      });
    });

    test('the exact bytes of ad 1', async () => {
      const r = await srv.request('/ads/1');
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'application/json');
      const m = /^\{"id":1,"title":"Ad 1","text":"Seed advertisement 1","price":10,"created_at":"([^"]*)"\}$/.exec(r.text);
      assert.ok(m, `unexpected body ${r.text}`);
      assert.match(m[1], ISO_MS);
    });

    test('a second start does not seed again', async () => {
      await srv.app.init();
      const { rows } = await lock.client.query('SELECT count(*)::int AS n FROM ads');
      assert.equal(rows[0].n, 100);
    });

    test('instances starting together seed once', async () => {
      await lock.client.query('DROP TABLE ads');
      const apps = [0, 1, 2].map(() => createApp({ DATABASE_URL: databaseUrl(), SEED_ADS: '100' }));
      try {
        await Promise.all(apps.map((a) => a.init()));
      } finally {
        await Promise.all(apps.map((a) => a.close().catch(() => {})));
      }
      const { rows } = await lock.client.query('SELECT count(*)::int AS n, min(id)::int AS lo, max(id)::int AS hi FROM ads');
      assert.deepEqual(rows[0], { n: 100, lo: 1, hi: 100 });
    });
  });

  describe('GET /ads', () => {
    test('default page: 20 newest, next is the last id', async () => {
      const r = await srv.request('/ads');
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'application/json');
      assert.deepEqual(r.json.ads.map((a) => a.id), range(100, 81));
      assert.equal(r.json.next, 81);
      assert.deepEqual(withoutCreatedAt(r.json.ads[0]), seedAd(100));
      assert.ok(r.text.startsWith('{"ads":[{"id":100,"title":"Ad 100",'));
      assert.ok(r.text.endsWith('}],"next":81}'));
    });

    test('paging with limit and before', async () => {
      const r = await srv.request('/ads?limit=30&before=81');
      assert.equal(r.status, 200);
      assert.deepEqual(r.json.ads.map((a) => a.id), range(80, 51));
      assert.equal(r.json.next, 51);
    });

    test('walking all pages ends with next null', async () => {
      const seen = [];
      let before = null;
      for (let pages = 0; pages < 20; pages++) {
        const r = await srv.request('/ads?limit=30' + (before === null ? '' : `&before=${before}`));
        assert.equal(r.status, 200);
        seen.push(...r.json.ads.map((a) => a.id));
        if (r.json.next === null) break;
        before = r.json.next;
      }
      assert.deepEqual(seen, range(100, 1));
    });

    test('a partial last page has next null; a full one ending at 1 has next 1', async () => {
      let r = await srv.request('/ads?limit=10&before=5');
      assert.equal(r.text.endsWith('"next":null}'), true);
      assert.deepEqual(r.json.ads.map((a) => a.id), [4, 3, 2, 1]);
      r = await srv.request('/ads?limit=4&before=5');
      assert.deepEqual(r.json.ads.map((a) => a.id), [4, 3, 2, 1]);
      assert.equal(r.json.next, 1);
      r = await srv.request('/ads?before=1');
      assert.equal(r.status, 200);
      assert.equal(r.text, '{"ads":[],"next":null}');
    });

    test('limit=100 and the largest before', async () => {
      const r = await srv.request('/ads?limit=100&before=9223372036854775807');
      assert.equal(r.status, 200);
      assert.equal(r.json.ads.length, 100);
      assert.equal(r.json.next, 1);
    });

    test('bad limit → 400', async () => {
      for (const l of ['0', '101', 'abc', '', '1.5', '-1', '+5', '1e1']) {
        const r = await srv.request('/ads?limit=' + encodeURIComponent(l));
        assert.equal(r.status, 400, `limit=${l}`);
        assert.equal(r.text, '{"error":"limit must be an integer from 1 to 100"}');
      }
    });

    test('bad before → 400', async () => {
      for (const b of ['0', '-1', 'abc', '', '9223372036854775808', '1.0']) {
        const r = await srv.request('/ads?before=' + encodeURIComponent(b));
        assert.equal(r.status, 400, `before=${b}`);
        assert.equal(r.text, '{"error":"before must be a positive integer"}');
      }
    });
  });

  describe('GET /ads/{id}', () => {
    test('an ad', async () => {
      const r = await srv.request('/ads/42');
      assert.equal(r.status, 200);
      assert.deepEqual(withoutCreatedAt(r.json), seedAd(42));
    });

    test('a missing ad → 404', async () => {
      let r = await srv.request('/ads/101');
      assert.equal(r.status, 404);
      assert.equal(r.headers.get('content-type'), 'application/json');
      assert.equal(r.text, '{"error":"ad 101 not found"}');
      r = await srv.request('/ads/9223372036854775807');
      assert.equal(r.status, 404);
      assert.equal(r.text, '{"error":"ad 9223372036854775807 not found"}');
      r = await srv.request('/ads/9007199254740993');
      assert.equal(r.text, '{"error":"ad 9007199254740993 not found"}');
    });

    test('leading zeros name the same ad', async () => {
      const r = await srv.request('/ads/007');
      assert.equal(r.status, 200);
      assert.equal(r.json.id, 7);
    });

    test('not a positive integer → 400', async () => {
      for (const id of ['0', '-1', 'abc', '1.0', '+1', '9223372036854775808', '1e3', '%31', '']) {
        const r = await srv.request('/ads/' + id);
        assert.equal(r.status, 400, `id ${id}`);
        assert.equal(r.text, '{"error":"id must be a positive integer"}');
      }
    });
  });

  describe('sleep_ms', () => {
    test('answers as without it', async () => {
      for (const [path, plain] of [
        ['/ads/42?sleep_ms=20', '/ads/42'],
        ['/ads/42?sleep_ms=0', '/ads/42'],
        ['/ads?limit=3&sleep_ms=005', '/ads?limit=3'],
        ['/ads?sleep_ms=1&sleep_ms=x', '/ads'],
      ]) {
        const [a, b] = [await srv.request(path), await srv.request(plain)];
        assert.equal(a.status, 200, path);
        assert.equal(a.text, b.text, path);
      }
    });

    test('not an integer from 0 to 10000 → 400, after the other parameters', async () => {
      const msg = '{"error":"sleep_ms must be an integer from 0 to 10000"}';
      for (const v of ['-1', '10001', 'abc', '', '1.5', '+5', '1e3', '99999999999999999999']) {
        for (const path of ['/ads/1', '/ads']) {
          const r = await srv.request(`${path}?sleep_ms=${encodeURIComponent(v)}`);
          assert.equal(r.status, 400, `${path} sleep_ms=${v}`);
          assert.equal(r.text, msg);
        }
      }
      assert.equal((await srv.request('/ads/0?sleep_ms=x')).text, '{"error":"id must be a positive integer"}');
      assert.equal((await srv.request('/ads?limit=0&sleep_ms=x')).text, '{"error":"limit must be an integer from 1 to 100"}');
    });
  });

  describe('POST /ads', () => {
    function post(body, headers = { 'Content-Type': 'application/json' }) {
      return srv.request('/ads', { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
    }

    test('201 with the ad and Location', async () => {
      const r = await post({ title: 'Bike', text: 'Red, "fast" \\ & ünïcödé 😀\n', price: 1500 });
      assert.equal(r.status, 201);
      assert.equal(r.headers.get('content-type'), 'application/json');
      const id = r.json.id;
      assert.ok(Number.isInteger(id) && id > 100);
      assert.equal(r.headers.get('location'), `/ads/${id}`);
      assert.deepEqual(withoutCreatedAt(r.json), { id, title: 'Bike', text: 'Red, "fast" \\ & ünïcödé 😀\n', price: 1500 });
      assert.ok(r.text.startsWith(`{"id":${id},"title":"Bike","text":"Red, \\"fast\\" \\\\ & ünïcödé 😀\\n","price":1500,"created_at":"`));
      const got = await srv.request(`/ads/${id}`);
      assert.equal(got.status, 200);
      assert.equal(got.text, r.text);
      const list = await srv.request('/ads?limit=1');
      assert.equal(list.json.ads[0].id, id);
    });

    test('defaults, unknown fields ignored, bounds accepted', async () => {
      let r = await post({ title: 'T', color: 'blue', nested: { a: [1] } });
      assert.equal(r.status, 201);
      assert.deepEqual(withoutCreatedAt(r.json), { id: r.json.id, title: 'T', text: '', price: 0 });
      r = await post({ title: 'x'.repeat(200), text: 'y'.repeat(4000), price: 1000000000 });
      assert.equal(r.status, 201);
      assert.equal(r.json.price, 1000000000);
      // 100 emoji are 200 UTF-16 code units, like Java's String.length()
      r = await post({ title: '😀'.repeat(100), price: 0 });
      assert.equal(r.status, 201);
    });

    test('a body of exactly 64 KiB is read', async () => {
      const head = '{"title":"Big","pad":"';
      const tail = '"}';
      const body = head + 'p'.repeat(65536 - head.length - tail.length) + tail;
      assert.equal(Buffer.byteLength(body), 65536);
      const r = await post(body);
      assert.equal(r.status, 201);
      assert.equal(r.json.title, 'Big');
    });

    test('a body over 64 KiB → 413', async () => {
      const head = '{"title":"Big","pad":"';
      const tail = '"}';
      const body = head + 'p'.repeat(65537 - head.length - tail.length) + tail;
      let r = await post(body);
      assert.equal(r.status, 413);
      assert.equal(r.text, '{"error":"body too large"}');
      // without Content-Length (chunked)
      const stream = new ReadableStream({
        start(c) {
          for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode('x'.repeat(10000)));
          c.close();
        },
      });
      r = await srv.request('/ads', { method: 'POST', body: stream, duplex: 'half' });
      assert.equal(r.status, 413);
      assert.equal(r.text, '{"error":"body too large"}');
      // the server still answers afterwards
      assert.equal((await srv.request('/health')).status, 200);
    });

    const cases = [
      ['not json', 'body must be a JSON object'],
      ['', 'body must be a JSON object'],
      ['[]', 'body must be a JSON object'],
      ['null', 'body must be a JSON object'],
      ['"title"', 'body must be a JSON object'],
      ['5', 'body must be a JSON object'],
      ['{"title":"x"', 'body must be a JSON object'],
      ['{}', 'title must be a string of 1 to 200 characters'],
      ['{"title":""}', 'title must be a string of 1 to 200 characters'],
      ['{"title":null}', 'title must be a string of 1 to 200 characters'],
      ['{"title":5}', 'title must be a string of 1 to 200 characters'],
      [JSON.stringify({ title: 'x'.repeat(201) }), 'title must be a string of 1 to 200 characters'],
      [JSON.stringify({ title: '😀'.repeat(100) + 'x' }), 'title must be a string of 1 to 200 characters'],
      ['{"title":"t","text":5}', 'text must be a string of at most 4000 characters'],
      ['{"title":"t","text":null}', 'text must be a string of at most 4000 characters'],
      [JSON.stringify({ title: 't', text: 'y'.repeat(4001) }), 'text must be a string of at most 4000 characters'],
      ['{"title":"t","price":-1}', 'price must be an integer from 0 to 1000000000'],
      ['{"title":"t","price":1000000001}', 'price must be an integer from 0 to 1000000000'],
      ['{"title":"t","price":1.5}', 'price must be an integer from 0 to 1000000000'],
      ['{"title":"t","price":"5"}', 'price must be an integer from 0 to 1000000000'],
      ['{"title":"t","price":null}', 'price must be an integer from 0 to 1000000000'],
      ['{"title":"t","price":1e30}', 'price must be an integer from 0 to 1000000000'],
      ['{"title":5,"text":5,"price":-1}', 'title must be a string of 1 to 200 characters'],
    ];
    for (const [body, message] of cases) {
      test(`400 for ${body.length > 40 ? body.slice(0, 40) + '…' : JSON.stringify(body)}`, async () => {
        const r = await post(body);
        assert.equal(r.status, 400);
        assert.equal(r.headers.get('content-type'), 'application/json');
        assert.equal(r.text, JSON.stringify({ error: message }));
      });
    }
  });

  describe('other requests', () => {
    test('GET /health', async () => {
      const r = await srv.request('/health');
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'application/json');
      assert.equal(r.text, '{"status":"ok"}');
    });

    test('unknown paths → 404', async () => {
      for (const path of ['/', '/adsx', '/ads/1/x', '/health/x', '/_cfbench/timings/x', '/_cfbench']) {
        const r = await srv.request(path);
        assert.equal(r.status, 404, path);
        assert.equal(r.text, '{"error":"not found"}');
      }
      const r = await srv.request('/nope', { method: 'DELETE' });
      assert.equal(r.status, 404);
    });

    test('other methods on known paths → 405 with Allow', async () => {
      const cases = [
        ['DELETE', '/ads', 'GET, POST'],
        ['PUT', '/ads', 'GET, POST'],
        ['POST', '/ads/1', 'GET'],
        ['DELETE', '/ads/1', 'GET'],
        ['POST', '/health', 'GET'],
        ['POST', '/_cfbench/timings', 'GET'],
        ['GET', '/_cfbench/timings/start', 'POST'],
        ['GET', '/_cfbench/timings/stop', 'POST'],
        ['GET', '/_cfbench/timings/flush', 'POST'],
      ];
      for (const [method, path, allow] of cases) {
        const r = await srv.request(path, { method });
        assert.equal(r.status, 405, `${method} ${path}`);
        assert.equal(r.headers.get('allow'), allow);
        assert.equal(r.text, '{"error":"method not allowed"}');
      }
    });

    test('a pool timeout → 503', async () => {
      const small = await startApp({ DB_POOL_SIZE: '1', DB_POOL_TIMEOUT_MS: '200' }, { init: false });
      await warmPool(small.app.pool);
      const held = await small.app.pool.connect();
      try {
        const r = await small.request('/ads/1');
        assert.equal(r.status, 503);
        assert.equal(r.text, '{"error":"database unavailable"}');
      } finally {
        held.release();
      }
      const r = await small.request('/ads/1');
      assert.equal(r.status, 200);
      await small.close();
    });

    test('sleep_ms holds the pooled connection in pg_sleep: a slow query', async () => {
      const small = await startApp({ DB_POOL_SIZE: '1', DB_POOL_TIMEOUT_MS: '250' }, { init: false });
      try {
        await warmPool(small.app.pool);
        const slow = small.request('/ads/1?sleep_ms=3000');
        // Once the slow request sleeps on the pool's only connection, the next one
        // waits for it, past the pool timeout.
        for (let i = 0; ; i++) {
          const { rows } = await lock.client.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep%'"
          );
          if (rows[0].n > 0) break;
          assert.ok(i < 2000, 'the slow request never reached pg_sleep');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        const r = await small.request('/ads?limit=1');
        assert.equal(r.status, 503);
        assert.equal(r.text, '{"error":"database unavailable"}');
        const s = await slow;
        assert.equal(s.status, 200);
        assert.deepEqual(withoutCreatedAt(s.json), seedAd(1));
      } finally {
        await small.close();
      }
    });

    // On a busy host a cold app's first connection took longer than the pool's wait
    // (5 s by default), and the app exited.
    test('a first connection slower than the pool wait still starts the app', async () => {
      const url = new URL(databaseUrl());
      const [dbHost, dbPort] = [url.hostname, Number(url.port)];
      const sockets = new Set();
      const proxy = net.createServer((inbound) => {
        sockets.add(inbound);
        inbound.pause();
        setTimeout(() => {
          const up = net.connect(dbPort, dbHost, () => {
            inbound.pipe(up);
            up.pipe(inbound);
            inbound.resume();
          });
          sockets.add(up);
          up.on('error', () => inbound.destroy());
          inbound.on('error', () => up.destroy());
        }, 1000);
      });
      await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      url.hostname = '127.0.0.1';
      url.port = String(proxy.address().port);
      try {
        const slow = await startApp({ DATABASE_URL: url.toString(), DB_POOL_TIMEOUT_MS: '250' });
        await slow.close();
      } finally {
        for (const s of sockets) s.destroy();
        await new Promise((resolve) => proxy.close(resolve));
      }
    });

    test('an unreachable database → 503, /health still 200', async () => {
      const app = createApp({ DATABASE_URL: 'postgres://u:p@127.0.0.1:1/none', DB_POOL_TIMEOUT_MS: '2000' });
      const port = await app.listen(0, '127.0.0.1');
      try {
        for (const [method, path, body] of [
          ['GET', '/ads/1'],
          ['GET', '/ads'],
          ['POST', '/ads', '{"title":"t"}'],
        ]) {
          const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, body });
          assert.equal(res.status, 503, `${method} ${path}`);
          assert.equal(await res.text(), '{"error":"database unavailable"}');
        }
        const res = await fetch(`http://127.0.0.1:${port}/health`);
        assert.equal(res.status, 200);
        await res.text();
      } finally {
        await app.close();
      }
    });
  });
});
