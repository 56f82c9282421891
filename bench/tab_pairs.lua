-- wrk script: alternates POST /v1/browsers/<window>/tabs and DELETE /v1/tabs/<id> of a tab it made.
-- The window id comes from the WINDOW environment variable.
local window = os.getenv("WINDOW")
local pending = {}
local turn = 0

request = function()
  turn = turn + 1
  if turn % 2 == 0 and #pending > 0 then
    local id = table.remove(pending)
    return wrk.format("DELETE", "/v1/tabs/" .. id)
  end
  return wrk.format("POST", "/v1/browsers/" .. window .. "/tabs",
    { ["Content-Type"] = "application/json" }, '{"url":"https://bench.example/page","activate":false}')
end

response = function(status, headers, body)
  if status == 201 then
    local id = body:match('"id":"(t%x+)"')
    if id then table.insert(pending, id) end
  end
end
