-- Health of an mcpexec MCPServer (mcpexec.dev/v1alpha1), a server the gateway brokers: Progressing until a gateway
-- observed it and while its first probe runs (Ready Unknown), Healthy when the gateway connected and listed its tools,
-- Degraded when it cannot reach it (Ready False, Unreachable: it keeps probing) or refuses to serve it (Stalled:
-- InvalidSpec, or NotServed for a stdio server outside the namespaces the gateway trusts). Written for Argo CD's Lua
-- runtime (base, table and package libraries only).
local hs = {}

local function find(conditions, kind)
  if conditions == nil then
    return nil
  end
  for _, condition in ipairs(conditions) do
    if condition.type == kind then
      return condition
    end
  end
  return nil
end

local function explain(condition)
  if condition.message ~= nil and condition.message ~= "" then
    return condition.reason .. ": " .. condition.message
  end
  return condition.reason
end

local status = obj.status
if status == nil or status.observedGeneration == nil or status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the mcpexec gateway to observe the server"
  return hs
end

local stalled = find(status.conditions, "Stalled")
local ready = find(status.conditions, "Ready")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = explain(stalled)
elseif ready == nil or ready.status == "Unknown" then
  hs.status = "Progressing"
  hs.message = ready ~= nil and explain(ready) or "Waiting for the gateway's first probe"
elseif ready.status == "True" then
  hs.status = "Healthy"
  hs.message = explain(ready)
else
  hs.status = "Degraded"
  hs.message = explain(ready)
end
return hs
