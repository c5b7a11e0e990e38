-- Health of an mcpexec AgentTask (mcpexec.dev/v1alpha1), code that runs once in a sandbox: Progressing until the
-- operator observed it and while it waits or runs, Healthy once it succeeded, Degraded when it failed, timed out or
-- was refused for good. Read from the Succeeded condition (Unknown, True, False), which the operator keeps with every
-- status write; written for Argo CD's Lua runtime (base, table and package libraries only).
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
  hs.message = "Waiting for the mcpexec operator to observe the task"
  return hs
end

local succeeded = find(status.conditions, "Succeeded")
if succeeded == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the task to be accepted"
elseif succeeded.status == "True" then
  hs.status = "Healthy"
  hs.message = explain(succeeded)
elseif succeeded.status == "False" then
  hs.status = "Degraded"
  hs.message = explain(succeeded)
else
  hs.status = "Progressing"
  hs.message = explain(succeeded)
end
return hs
