-- wrk script for bench/proxies.sh's miss cost: every request asks for a
-- URL no one asked for before (the URL's path with a new query), so every
-- reply is a miss that the proxy fetches from the origin.
local prefix = tostring(os.time()) .. "-" .. tostring(math.random(1000000000))
local n = 0

function request()
  n = n + 1
  return wrk.format(nil, wrk.path .. "?miss=" .. prefix .. "-" .. n)
end
