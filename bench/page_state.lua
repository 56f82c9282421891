-- wrk script: PATCH /v1/tabs/<id> with a new loading progress, on random tabs of one window (a
-- renderer reporting page state). The tab ids come from the file named by TABS_FILE, one a line.
local ids = {}
for line in io.lines(os.getenv("TABS_FILE")) do ids[#ids + 1] = line end
local n = 0

request = function()
  n = n + 1
  local id = ids[math.random(#ids)]
  return wrk.format("PATCH", "/v1/tabs/" .. id, { ["Content-Type"] = "application/json" },
    string.format('{"progress":%.3f,"loading":true}', (n % 1000) / 1000))
end
