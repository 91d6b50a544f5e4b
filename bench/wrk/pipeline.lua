-- pipeline.lua: wrk script for the "pipe16" scenario (see docs/benchmarks.md).
-- Each write carries 16 pipelined GET requests for the URL's path; wrk
-- counts the 16 responses as 16 requests. Another depth can be passed
-- after "--", e.g. `wrk ... -s pipeline.lua URL -- 32`.
--   taskset -c 0 wrk -t1 -c100 -d10s --latency -s bench/wrk/pipeline.lua http://127.0.0.1:8080/

local batch

function init(args)
  local depth = tonumber(args[1]) or 16
  local requests = {}
  for i = 1, depth do
    requests[i] = wrk.format("GET") -- path and Host header from the URL
  end
  batch = table.concat(requests)
end

function request()
  return batch
end
