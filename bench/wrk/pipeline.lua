-- pipeline.lua: wrk script for the "pipe16" scenario (see docs/benchmarks.md).
-- Each write carries 16 pipelined GET requests for the URL's path; wrk
-- counts the 16 responses as 16 requests. Another depth can be passed
-- after "--", e.g. `wrk ... -s pipeline.lua URL -- 32`.
--   taskset -c 0 wrk -t1 -c100 -d10s --latency -s bench/wrk/pipeline.lua http://127.0.0.1:8080/
-- A body size after the depth makes them POST requests with a body of that
-- many letters (application/octet-stream), as bench/ws/run's HTTP baseline:
--   wrk ... -s pipeline.lua http://127.0.0.1:8080/api/echo/raw -- 16 4096

local batch

function init(args)
  local depth = tonumber(args[1]) or 16
  local size = tonumber(args[2])
  local method, headers, body = "GET", nil, nil
  if size then
    local letters = {}
    for i = 1, size do
      letters[i] = string.char(97 + (i - 1) % 26)
    end
    method, body = "POST", table.concat(letters)
    headers = { ["Content-Type"] = "application/octet-stream" }
  end
  local requests = {}
  for i = 1, depth do
    -- path and Host header from the URL; Content-Length added for a body
    requests[i] = wrk.format(method, nil, headers, body)
  end
  batch = table.concat(requests)
end

function request()
  return batch
end
