// Sends the same requests to two bulletin boards (each on a freshly seeded database)
// and fails when their answers differ in status, the headers the contract fixes, or body
// bytes (created_at values, which depend on when each row was written, aside).
//
//   node apps/parity/compare.mjs http://127.0.0.1:8081 http://127.0.0.1:8082
import assert from 'node:assert/strict';

const [a, b] = process.argv.slice(2);
if (!a || !b) {
  console.error('usage: node compare.mjs BASE_URL_A BASE_URL_B');
  process.exit(2);
}

const json = { 'Content-Type': 'application/json' };
const requests = [
  ['GET', '/health'],
  ['GET', '/ads'],
  ['GET', '/ads?limit=5'],
  ['GET', '/ads?limit=5&before=50'],
  ['GET', '/ads?limit=100&before=3'],
  ['GET', '/ads?limit=1&before=2'],
  ['GET', '/ads?limit=0'],
  ['GET', '/ads?limit=101'],
  ['GET', '/ads?limit=abc'],
  ['GET', '/ads?before=-1'],
  ['GET', '/ads?before=0'],
  ['GET', '/ads/1'],
  ['GET', '/ads/42'],
  ['GET', '/ads/007'],
  ['GET', '/ads/999999'],
  ['GET', '/ads/0'],
  ['GET', '/ads/abc'],
  ['GET', '/ads/9223372036854775808'],
  ['GET', '/ads/3?sleep_ms=5'],
  ['GET', '/ads/007?sleep_ms=0'],
  ['GET', '/ads?limit=2&sleep_ms=1'],
  ['GET', '/ads?limit=2&sleep_ms=1&sleep_ms=x'],
  ['GET', '/ads/3?sleep_ms=10001'],
  ['GET', '/ads/3?sleep_ms='],
  ['GET', '/ads?sleep_ms=abc'],
  ['GET', '/ads?sleep_ms=%2B5'],
  ['GET', '/ads/0?sleep_ms=abc'],
  ['GET', '/ads?limit=0&sleep_ms=-1'],
  ['POST', '/ads', '{"title":"bike","text":"city bike, 3 gears","price":120}'],
  ['POST', '/ads', '{"title":"Überfahrt \\"quoted\\" ✓","price":0}'],
  ['POST', '/ads', '{"title":"only a title"}'],
  ['POST', '/ads', '{"title":""}'],
  ['POST', '/ads', `{"title":"${'x'.repeat(201)}"}`],
  ['POST', '/ads', '{"title":"t","text":5}'],
  ['POST', '/ads', `{"title":"t","text":"${'y'.repeat(4001)}"}`],
  ['POST', '/ads', '{"title":"t","price":-1}'],
  ['POST', '/ads', '{"title":"t","price":1.5}'],
  ['POST', '/ads', '{"title":"t","price":"5"}'],
  ['POST', '/ads', '{"title":"t","unknown":true}'],
  ['POST', '/ads', '[1,2]'],
  ['POST', '/ads', 'not json'],
  ['POST', '/ads', `{"title":"big","text":"${'z'.repeat(70000)}"}`],
  ['GET', '/ads?limit=3'],
  ['DELETE', '/ads'],
  ['PUT', '/ads/1'],
  ['GET', '/nope'],
  ['GET', '/_cfbench/timings'],
];

const createdAt = /"created_at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"/g;

async function call(base, [method, path, body]) {
  const res = await fetch(base + path, { method, body, headers: body ? json : {} });
  const text = await res.text();
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    allow: res.headers.get('allow'),
    location: res.headers.get('location'),
    body: text.replace(createdAt, '"created_at":"…"'),
    rawBody: text,
  };
}

let failed = 0;
for (const req of requests) {
  const [ra, rb] = [await call(a, req), await call(b, req)];
  for (const r of [ra, rb]) {
    for (const m of r.rawBody.matchAll(/"created_at":"([^"]*)"/g)) {
      assert.match(m[1], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, `${req[0]} ${req[1]}: created_at ${m[1]}`);
    }
  }
  delete ra.rawBody;
  delete rb.rawBody;
  try {
    assert.deepEqual(rb, ra);
  } catch {
    failed++;
    console.error(`differ: ${req[0]} ${req[1]}\n  ${a}: ${JSON.stringify(ra).slice(0, 400)}\n  ${b}: ${JSON.stringify(rb).slice(0, 400)}`);
  }
}
if (failed > 0) {
  console.error(`parity: ${failed} of ${requests.length} answers differ`);
  process.exit(1);
}
console.log(`parity: ${requests.length} answers identical`);
