-- Loaded by the load-generator benchmark (tools/bench) with wrk -s: at the end
-- of a run, prints wrk's summary as one JSON line after its human-readable text, so
-- the harness reads numbers instead of text (tools/bench/generator ParseWrk).
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"duration_us":%d,"requests":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"latency_p99_us":%d}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout, latency:percentile(99)))
end
