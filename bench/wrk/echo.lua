-- echo.lua: wrk script for the "echo" scenario (see docs/benchmarks.md).
-- Every request is POST <url path> with a ~60-byte JSON body; the server
-- parses it and serializes it back. wrk.format adds the Content-Length.
--   taskset -c 0 wrk -t1 -c100 -d10s --latency -s bench/wrk/echo.lua http://127.0.0.1:8080/api/echo
wrk.method = "POST"
wrk.body = '{"name":"Alice","age":30,"email":"alice@example.com"}'
wrk.headers["Content-Type"] = "application/json"
