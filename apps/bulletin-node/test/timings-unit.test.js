'use strict';

// Unit tests of trace id parsing and the timings buffer (no database needed).

const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { TimingsBuffer, UnixMicroClock, traceIdFromHeaders } = require('../lib/timings');

const T32 = '463ac35c9f6413ad48485a3953bb6124';
const T16 = 'a3ce929d0e0e4736';

describe('trace ids', () => {
  test('X-B3-TraceId of 32 and 16 hex digits', () => {
    assert.equal(traceIdFromHeaders({ 'x-b3-traceid': T32 }), T32);
    assert.equal(traceIdFromHeaders({ 'x-b3-traceid': T16 }), '0000000000000000' + T16);
    assert.equal(traceIdFromHeaders({ 'x-b3-traceid': T32.toUpperCase() }), T32);
  });

  test('single b3 header', () => {
    assert.equal(traceIdFromHeaders({ b3: `${T32}-e457b5a2e4d86bd1` }), T32);
    assert.equal(traceIdFromHeaders({ b3: `${T32}-e457b5a2e4d86bd1-1` }), T32);
    assert.equal(traceIdFromHeaders({ b3: `${T16}-e457b5a2e4d86bd1-d-05e3ac9a4f6e3b90` }), '0000000000000000' + T16);
  });

  test('X-B3-TraceId first, b3 when it is missing or malformed', () => {
    const other = 'ffffffffffffffffffffffffffffffff';
    assert.equal(traceIdFromHeaders({ 'x-b3-traceid': T32, b3: `${other}-e457b5a2e4d86bd1` }), T32);
    assert.equal(traceIdFromHeaders({ 'x-b3-traceid': 'xyz', b3: `${other}-e457b5a2e4d86bd1` }), other);
  });

  test('malformed or missing → null', () => {
    for (const headers of [
      {},
      { 'x-b3-traceid': '' },
      { 'x-b3-traceid': T32.slice(1) },
      { 'x-b3-traceid': T32 + '0' },
      { 'x-b3-traceid': 'g'.repeat(32) },
      { 'x-b3-traceid': T16 + 'abcd' },
      { 'x-b3-traceid': ` ${T16}` },
      { 'x-b3-spanid': T16 },
      { b3: '1' },
      { b3: '0' },
      { b3: T32 },
      { b3: `${T32}-e457b5a2` },
      { b3: `${T32}-e457b5a2e4d86bd1-x` },
      { b3: `${T32}-e457b5a2e4d86bd1-1-05e3` },
      { b3: `${T32}-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90-extra` },
      { b3: `${T32.slice(2)}-e457b5a2e4d86bd1` },
    ]) {
      assert.equal(traceIdFromHeaders(headers), null, JSON.stringify(headers));
    }
  });
});

describe('timings buffer', () => {
  test('status, rows in arrival order, flush clears', () => {
    const b = new TimingsBuffer(10, true);
    const s1 = b.arrival();
    const s2 = b.arrival();
    const s3 = b.arrival();
    // completed out of order
    assert.equal(b.add('00000000000000000000000000000002', s2, 2000, 1999, 2999, 10999), true);
    assert.equal(b.add('0000000000000000ffffffffffffffff', s3, 3000, 0, 0, 0), true);
    assert.equal(b.add(T32, s1, 1000, 1000, 2000, 5000), true);
    assert.equal(b.statusJson(), '{"recording":true,"capacity":10,"buffered":3,"dropped":0}');
    assert.equal(
      b.flushJson(4),
      '{"instance_index":4,"capacity":10,"dropped":0,"rows":[' +
        `["${T32}",1000,1,2,5],` +
        '["00000000000000000000000000000002",2000,1,2,10],' +
        '["0000000000000000ffffffffffffffff",3000,0,0,0]]}'
    );
    assert.equal(b.statusJson(), '{"recording":true,"capacity":10,"buffered":0,"dropped":0}');
    assert.equal(b.flushJson(4), '{"instance_index":4,"capacity":10,"dropped":0,"rows":[]}');
  });

  test('full → dropped, cleared by flush', () => {
    const b = new TimingsBuffer(2, false);
    for (let i = 0; i < 5; i++) b.add(T32, b.arrival(), 1, 0, 0, 0);
    assert.equal(b.statusJson(), '{"recording":false,"capacity":2,"buffered":2,"dropped":3}');
    const flushed = JSON.parse(b.flushJson(0));
    assert.equal(flushed.rows.length, 2);
    assert.equal(flushed.dropped, 3);
    assert.equal(b.statusJson(), '{"recording":false,"capacity":2,"buffered":0,"dropped":0}');
  });

  test('capacity 0 keeps nothing', () => {
    const b = new TimingsBuffer(0, true);
    assert.equal(b.add(T32, b.arrival(), 1, 0, 0, 0), false);
    assert.equal(b.statusJson(), '{"recording":true,"capacity":0,"buffered":0,"dropped":1}');
  });
});

describe('clock', () => {
  test('integer Unix microseconds within a millisecond of the wall clock', () => {
    const clock = new UnixMicroClock();
    for (let i = 0; i < 1000; i++) {
      const lo = Date.now() * 1000;
      const at = clock.at(process.hrtime.bigint());
      const hi = Date.now() * 1000 + 1000;
      assert.ok(Number.isInteger(at));
      assert.ok(at >= lo - 2000 && at <= hi + 2000, `${at} not in [${lo}, ${hi}]`);
    }
  });
});
