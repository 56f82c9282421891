-- wrk script: open/close pairs over one or more windows (WINDOWS: comma-separated ids), each
-- connection going round them: POST /v1/browsers/<w>/tabs, then DELETE a tab it made.
local windows = {}
for id in string.gmatch(os.getenv("WINDOWS"), "[^,]+") do table.insert(windows, id) end
local pending = {}
local turn = 0

request = function()
  turn = turn + 1
  if turn % 2 == 0 and #pending > 0 then
    local id = table.remove(pending)
    return wrk.format("DELETE", "/v1/tabs/" .. id)
  end
  local window = windows[(math.floor(turn / 2) % #windows) + 1]
  return wrk.format("POST", "/v1/browsers/" .. window .. "/tabs",
    { ["Content-Type"] = "application/json" }, '{"url":"https://bench.example/page","activate":false}')
end

response = function(status, headers, body)
  if status == 201 then
    local id = body:match('"id":"(t%x+)"')
    if id then table.insert(pending, id) end
  end
end
