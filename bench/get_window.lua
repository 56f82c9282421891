-- wrk script: GET /v1/browsers/<WINDOW>.
local window = os.getenv("WINDOW")
request = function() return wrk.format("GET", "/v1/browsers/" .. window) end
