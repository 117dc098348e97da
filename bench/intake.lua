-- wrk script of the intake benchmark (bench/intake.py runs it; see bench/README.md).
--
--   wrk -t2 -c64 -d15s --timeout 30s -s bench/intake.lua \
--       -H 'Authorization: Bearer sk_test_...' URL -- <run id> <json|form>
--
-- Every request is `POST <URL path>` with its own Idempotency-Key and its own customer
-- (email and name), as JSON (moneyrail, the bare endpoint) or form-encoded (localstripe).
-- Statuses are counted per thread in response(), and done() prints one line
-- "BENCH_JSON {...}" with the totals and the latency percentiles in microseconds.

local threads = {}

function setup(thread)
   table.insert(threads, thread)
   thread:set("tid", #threads)
end

function init(args)
   run_id = args[1] or "run"
   form = args[2] == "form"
   sequence = 0
   statuses = {}
   wrk.method = "POST"
   if form then
      wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
   else
      wrk.headers["Content-Type"] = "application/json"
   end
end

function request()
   sequence = sequence + 1
   local n = run_id .. "-" .. tid .. "-" .. sequence
   local body
   if form then
      body = "email=c" .. n .. "%40example.com&name=Bench+" .. n
   else
      body = '{"email":"c' .. n .. '@example.com","name":"Bench ' .. n .. '"}'
   end
   wrk.headers["Idempotency-Key"] = "bench-" .. n
   return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
   statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
   local counts = {}
   for _, thread in ipairs(threads) do
      for status, count in pairs(thread:get("statuses")) do
         counts[status] = (counts[status] or 0) + count
      end
   end
   local parts = {}
   for status, count in pairs(counts) do
      table.insert(parts, string.format('"%d": %d', status, count))
   end
   local e = summary.errors
   io.write(string.format(
      'BENCH_JSON {"requests": %d, "duration_us": %d, "bytes": %d, '
         .. '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, '
         .. '"statuses": {%s}, '
         .. '"latency_us": {"min": %d, "mean": %.1f, "stdev": %.1f, "max": %d, '
         .. '"p50": %d, "p90": %d, "p99": %d, "p99_9": %d}}\n',
      summary.requests, summary.duration, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout,
      table.concat(parts, ", "),
      latency.min, latency.mean, latency.stdev, latency.max,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9)
   ))
end
