-- The script before the string state and the fast path (commit 5e8356b),
-- kept to pin the new one to the same replies on random steps.

local mode = ARGV[1]
local now
if ARGV[2] ~= '' then
  now = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local n = tonumber(ARGV[3])

local function divmod(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    q = q - 1
    r = r + b
  elseif r >= b then
    q = q + 1
    r = r - b
  end
  return q, r
end

local function ceildiv(a, b)
  local q, r = divmod(a, b)
  if r > 0 then q = q + 1 end
  return q
end

local fields = {'t'}
for i = 1, n do
  local name = ARGV[6 + 7 * (i - 1)]
  fields[#fields + 1] = 'v:' .. name
  fields[#fields + 1] = 'r:' .. name
  fields[#fields + 1] = 'd:' .. name
end
local st = redis.call('HMGET', KEYS[1], unpack(fields))
local last = tonumber(st[1])
local later = last == nil or now > last

local L = {}
for i = 1, n do
  local b = 6 + 7 * (i - 1)
  local l = {
    name = ARGV[b], cap = tonumber(ARGV[b + 1]), num = tonumber(ARGV[b + 2]),
    den = tonumber(ARGV[b + 3]), unit = tonumber(ARGV[b + 4]),
    a = tonumber(ARGV[b + 5]), b = tonumber(ARGV[b + 6]),
    tok = tonumber(st[3 * i - 1]), rem = tonumber(st[3 * i]) or 0,
  }
  if l.tok == nil then
    l.tok = l.cap
    l.rem = 0
  elseif st[3 * i + 1] ~= ARGV[b + 3] then
    -- Written by a process with another rate (a rolling deploy): keep the
    -- whole tokens, drop the fraction, which is in other units.
    l.rem = 0
  end
  -- Refill for the whole units elapsed; time that runs backwards adds nothing.
  if l.tok >= l.cap then
    l.tok = l.cap
    l.rem = 0
  elseif l.num > 0 and last ~= nil and later then
    local e = now - last
    if l.unit > 1 then e = divmod(now, l.unit) - divmod(last, l.unit) end
    if e > 0 then
      local need = (l.cap - l.tok) * l.den - l.rem
      if e >= ceildiv(need, l.num) then
        l.tok = l.cap
        l.rem = 0
      else
        local q, r = divmod(l.rem + l.num * e, l.den)
        l.tok = l.tok + q
        l.rem = r
      end
    end
  end
  L[i] = l
end

-- wait returns the µs until limit l holds cost tokens, or -1 for never.
local function wait(l, cost)
  if l.tok >= cost then return 0 end
  if l.num == 0 then return -1 end
  local w = ceildiv((cost - l.tok) * l.den - l.rem, l.num)
  -- Waits past 2^52 µs (142 years) are reported as that.
  if w > 4503599627370496 / l.unit then return 4503599627370496 end
  if l.unit == 1 then return w end
  local _, r = divmod(now, l.unit)
  return w * l.unit - r
end

local function reply(status, w, amount)
  local out = {status, w, amount}
  for i = 1, n do
    out[#out + 1] = L[i].tok
    out[#out + 1] = L[i].rem
  end
  return out
end

local function save()
  local args = {'t', now}
  if not later then args[2] = last end
  local ttl = 0
  for i = 1, n do
    local l = L[i]
    args[#args + 1] = 'v:' .. l.name
    args[#args + 1] = l.tok
    args[#args + 1] = 'r:' .. l.name
    args[#args + 1] = l.rem
    args[#args + 1] = 'd:' .. l.name
    args[#args + 1] = ARGV[6 + 7 * (i - 1) + 3]
    if l.tok < l.cap then
      if l.num == 0 then
        ttl = -1
      elseif ttl >= 0 then
        local full = ceildiv((l.cap - l.tok) * l.den - l.rem, l.num)
        if full > 35184372088832 / l.unit then
          ttl = -1
        else
          full = full * l.unit
          if full > ttl then ttl = full end
        end
      end
    end
  end
  if ttl == 0 then
    -- Every limit is full, which is what a missing key means.
    redis.call('DEL', KEYS[1])
    return
  end
  redis.call('HSET', KEYS[1], unpack(args))
  if ttl < 0 then
    -- Never full, or not for over a year (2^45 µs): keep the key.
    redis.call('PERSIST', KEYS[1])
  else
    -- Expire when the limits are full again, on the clock the script uses.
    -- Round up and add 1 ms: expiring early would mint tokens.
    -- From the stored time if the clock went back: nothing refills before it.
    redis.call('PEXPIREAT', KEYS[1], ceildiv(math.max(now, last or now) + ttl, 1000) + 1)
  end
end

if mode == 's' then
  if redis.call('GET', KEYS[2]) == 's' then return reply(2, 0, 0) end
  for i = 1, n do
    local l = L[i]
    local d = l.b - l.a
    if d < 0 then
      l.tok = l.tok - d
      if l.tok >= l.cap then
        l.tok = l.cap
        l.rem = 0
      end
    elseif d > 0 then
      -- Debt is bounded by one capacity, which bounds every product above.
      l.tok = math.max(l.tok - d, -l.cap)
    end
  end
  save()
  redis.call('SET', KEYS[2], 's', 'PX', tonumber(ARGV[4]))
  return reply(1, 0, 0)
end

if (mode == 'a' or mode == 'l') and KEYS[2] and redis.call('EXISTS', KEYS[2]) == 1 then
  return reply(2, 0, 0)
end

local w = 0
for i = 1, n do
  local l = L[i]
  if l.a > 0 then
    local wi = wait(l, l.a)
    if wi < 0 then
      w = -1
      break
    end
    if wi > w then w = wi end
  end
end
if mode == 'p' then
  if w < 0 then return reply(-1, 0, 0) end
  return reply(w == 0 and 1 or 0, w, 0)
end
if w < 0 then return reply(-1, 0, 0) end
if w > 0 then return reply(0, w, 0) end

local amount = 0
if mode == 'l' then
  local l = L[1]
  amount = math.max(l.a, math.min(l.b, (divmod(l.tok, tonumber(ARGV[5])))))
  l.tok = l.tok - amount
  if amount < l.b then
    -- A short lease: tell the client when a full one could be had.
    w = wait(l, l.b)
  end
else
  for i = 1, n do
    L[i].tok = L[i].tok - L[i].a
  end
end
save()
if KEYS[2] then
  redis.call('SET', KEYS[2], 'o', 'PX', tonumber(ARGV[4]))
end
return reply(1, w, amount)
