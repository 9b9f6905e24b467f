-- wrk's done() hook: the exact counts and latencies of one run as one JSON line on
-- stdout, after wrk's own text report (which rounds bytes and durations). No
-- request() or response() hook is defined, so wrk keeps its fast C path.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"wrk_report":1,"duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.3f}}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
