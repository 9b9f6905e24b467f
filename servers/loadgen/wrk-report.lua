-- wrk's done() hook: the exact counts and latencies of one run as one JSON line on
-- stdout, after wrk's own text report (which rounds bytes and durations). No
-- request() or response() hook is defined, so wrk keeps its fast C path.
--
-- A scenario's method and JSON body come from the environment (the harness sets them);
-- wrk builds its one request from wrk.method, wrk.body and wrk.headers once per thread.
local method = os.getenv("NODEBENCH_WRK_METHOD")
if method then wrk.method = method end
local body = os.getenv("NODEBENCH_WRK_BODY")
if body then
  wrk.body = body
  wrk.headers["Content-Type"] = "application/json"
end
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
