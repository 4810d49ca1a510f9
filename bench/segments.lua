-- wrk script: each connection walks the segment URLs listed in $URLS_FILE (one path a
-- line), starting at a different place, the way many players of one asset would.
local paths = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

function init(args)
  local f = assert(io.open(os.getenv("URLS_FILE"), "r"))
  for line in f:lines() do
    if #line > 0 then paths[#paths + 1] = line end
  end
  f:close()
  idx = (id * 7919) % #paths
end

function request()
  idx = idx % #paths + 1
  return wrk.format("GET", paths[idx])
end
