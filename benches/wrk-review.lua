-- wrk script for benches/hot-path-wrk.sh: POSTs the review body in $BODY on every request and
-- counts answers that are not a 200 with "allowed":true (the body is one ipam-guard admits).
local f = assert(io.open(os.getenv("BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  bad = 0
end

function response(status, headers, body)
  if status ~= 200 or not body:find('"allowed":true', 1, true) then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local b = 0
  for _, t in ipairs(threads) do
    b = b + t:get("bad")
  end
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout
  io.write(string.format("RESULT requests=%d rps=%.0f p50=%d p99=%d not_allowed=%d errors=%d\n",
    summary.requests, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), b, errors))
end
