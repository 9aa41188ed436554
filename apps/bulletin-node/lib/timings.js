'use strict';

// In-app timings: B3 trace ids, a Unix-microsecond clock and the fixed-capacity buffer.

const HEX16 = /^[0-9a-fA-F]{16}$/;
const HEX32 = /^[0-9a-fA-F]{32}$/;
const SAMPLED = /^[01d]$/;
const ZEROS16 = '0000000000000000';

// A trace id of 16 or 32 hex digits → 32 lowercase hex digits; anything else → null.
function normalizeTraceId(s) {
  if (s.length === 32 && HEX32.test(s)) return s.toLowerCase();
  if (s.length === 16 && HEX16.test(s)) return ZEROS16 + s.toLowerCase();
  return null;
}

// The trace id of the single b3 header traceid-spanid[-sampled[-parentspanid]], or null.
function traceIdFromB3(value) {
  const parts = value.split('-');
  if (parts.length < 2 || parts.length > 4) return null;
  const traceId = normalizeTraceId(parts[0]);
  if (traceId === null || !HEX16.test(parts[1])) return null;
  if (parts.length >= 3 && !SAMPLED.test(parts[2])) return null;
  if (parts.length === 4 && !HEX16.test(parts[3])) return null;
  return traceId;
}

// The request's trace id from X-B3-TraceId, else from b3; null when neither is valid.
function traceIdFromHeaders(headers) {
  const x = headers['x-b3-traceid'];
  if (typeof x === 'string') {
    const traceId = normalizeTraceId(x);
    if (traceId !== null) return traceId;
  }
  const b3 = headers.b3;
  if (typeof b3 === 'string') return traceIdFromB3(b3);
  return null;
}

// Unix microseconds for a process.hrtime.bigint() reading: monotonic offsets from an
// anchor, re-anchored on the wall clock when the two drift apart by more than ~1 ms.
class UnixMicroClock {
  constructor() {
    this.anchorHr = process.hrtime.bigint();
    this.anchorUs = Date.now() * 1000;
  }

  at(hr) {
    const wallUs = Date.now() * 1000;
    let us = this.anchorUs + Number(hr - this.anchorHr) / 1000;
    // Date.now() is truncated to the millisecond: the true time is in [wallUs, wallUs+1000).
    if (us < wallUs - 1000 || us >= wallUs + 2000) {
      this.anchorHr = hr;
      this.anchorUs = wallUs;
      us = wallUs;
    }
    return Math.floor(us);
  }
}

// Rows in preallocated typed arrays; full → counted as dropped. Rows are appended when a
// response completes and carry their arrival sequence number, so a flush can list them
// in arrival order.
class TimingsBuffer {
  constructor(capacity, recording) {
    this.capacity = capacity;
    this.recording = Boolean(recording);
    this.traceHi = new BigUint64Array(capacity);
    this.traceLo = new BigUint64Array(capacity);
    this.seq = new Float64Array(capacity);
    this.at = new Float64Array(capacity);
    this.poolWaitUs = new Float64Array(capacity);
    this.queryUs = new Float64Array(capacity);
    this.totalUs = new Float64Array(capacity);
    this.count = 0;
    this.dropped = 0;
    this.nextSeq = 0;
  }

  // The arrival sequence number of a request to be recorded.
  arrival() {
    return this.nextSeq++;
  }

  // Keeps one row (durations in nanoseconds); false when the buffer is full.
  add(traceId, seq, atUs, poolWaitNs, queryNs, totalNs) {
    if (this.count >= this.capacity) {
      this.dropped++;
      return false;
    }
    const i = this.count++;
    this.traceHi[i] = BigInt('0x' + traceId.slice(0, 16));
    this.traceLo[i] = BigInt('0x' + traceId.slice(16));
    this.seq[i] = seq;
    this.at[i] = atUs;
    this.poolWaitUs[i] = Math.floor(poolWaitNs / 1000);
    this.queryUs[i] = Math.floor(queryNs / 1000);
    this.totalUs[i] = Math.floor(totalNs / 1000);
    return true;
  }

  statusJson() {
    return (
      `{"recording":${this.recording},"capacity":${this.capacity},` +
      `"buffered":${this.count},"dropped":${this.dropped}}`
    );
  }

  // The flush answer with every buffered row in arrival order; clears the buffer and the
  // dropped count in the same synchronous step, so no row is lost or listed twice.
  flushJson(instanceIndex) {
    const n = this.count;
    const seq = this.seq;
    const order = new Uint32Array(n);
    let sorted = true;
    for (let i = 0; i < n; i++) {
      order[i] = i;
      if (i > 0 && seq[i] < seq[i - 1]) sorted = false;
    }
    if (!sorted) order.sort((a, b) => seq[a] - seq[b]);
    const rows = new Array(n);
    for (let k = 0; k < n; k++) {
      const i = order[k];
      rows[k] =
        '["' +
        this.traceHi[i].toString(16).padStart(16, '0') +
        this.traceLo[i].toString(16).padStart(16, '0') +
        '",' +
        this.at[i] +
        ',' +
        this.poolWaitUs[i] +
        ',' +
        this.queryUs[i] +
        ',' +
        this.totalUs[i] +
        ']';
    }
    const json =
      `{"instance_index":${instanceIndex},"capacity":${this.capacity},` +
      `"dropped":${this.dropped},"rows":[${rows.join(',')}]}`;
    this.count = 0;
    this.dropped = 0;
    return json;
  }
}

module.exports = { TimingsBuffer, UnixMicroClock, normalizeTraceId, traceIdFromB3, traceIdFromHeaders };
