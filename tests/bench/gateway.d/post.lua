-- tests/bench/gateway.d/post.lua: the wrk script of tests/bench/gateway.
-- Every request is the same POST: the body comes from BENCH_BODY, extra
-- headers from BENCH_HEADERS (one "Name: value" per line), so neither the
-- body nor the API key shows on a command line. At the end it prints one
-- line the script parses: exact counts and percentiles in microseconds,
-- rather than wrk's rounded human-readable figures.

wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY") or ""
wrk.headers["Content-Type"] = "application/json"
for line in string.gmatch(os.getenv("BENCH_HEADERS") or "", "[^\n]+") do
   local name, value = string.match(line, "^([^:]+):%s*(.*)$")
   if name then
      wrk.headers[name] = value
   end
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "BENCH requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
      summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
      e.connect, e.read, e.write, e.status, e.timeout))
end
