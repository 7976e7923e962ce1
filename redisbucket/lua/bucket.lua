-- The script makes one decision atomically: refill every limit from the
-- server's clock, check, spend, write and set the expiry. Lua numbers are
-- doubles, so the Go side (shape.go) guarantees that every product and sum
-- below stays under 2^52 and the script returns integers only.
--
-- State: KEYS[1] is one string of little-endian doubles (struct.pack '<d',
-- exact for these integers), t tok_1 rem_1 den_1 ... tok_n rem_n den_n: the
-- last update (µs on the server clock) and, per limit in cost order, the
-- whole tokens, the fraction in 1/den units and that den. One GET and one
-- SET ... PXAT per decision: a hash with per-field names, or text parsed
-- with string.match and written with string.format, cost the script more
-- server time than struct (benchmarks/README.md). A missing key is a full
-- bucket, unless the client brings a view of it (below). Processes configured differently
-- (during a rolling deploy) share the whole tokens, each capping them at
-- its own capacity; a fraction written with another den is dropped; limits
-- the value lacks are full. A value of another length, one that is not
-- such integers, a level out of the exact range, a time more than a minute
-- ahead of the clock, or a key of another type (a hash, a list: GET's
-- WRONGTYPE, read with pcall) is garbage: the limits restart empty (flag 1
-- in the reply), since a bucket that forgets its state must not hand out a
-- full one. While a server's lower quota is stored for a limit (mode t),
-- the value carries it after the levels (see the reading below), so the
-- fast path, which takes only a value of one limit's 32 bytes, falls
-- through to the general path.
--
-- Keys and arguments:
--   - KEYS[2]: the permit key when ARGV[4] is not "" (modes a and r with a
--     permit, modes c, l and s). The last key is the fleet key when ARGV[8] is not "";
--     before it (or last), the back key when ARGV[7] begins with b. The
--     sequence key, if any, follows the permit key (or the state key).
--   - ARGV[1]: mode: a acquire all-or-nothing, l lease (one limit: at least
--     a, at most b tokens), p peek (it writes only a reset, a rebuilt key,
--     a charge and the fleet's registration), s settle, d drain (a server's
--     word for the fleet: lower the limits with a = 1 to at most b, and
--     with ARGV[5] above 0 pause every limit for that many µs), t tune (a
--     server's size of one limit, in ARGV[10+6n...], see mode t below:
--     stored with the levels, read by every decision), r reserve (mode a
--     that takes the costs now, below zero if need be, and replies the
--     wait until they are covered, with headroom for the wire in
--     ARGV[10+6n]; see mode r below), c give a
--     reservation back (see mode c below). With five or six
--     arguments the call is the fast path's (below), not this layout;
--     with more and a number first, a batch of fast-path calls (below).
--   - ARGV[2]: the time in µs to use instead of TIME, or "" (tests only);
--     then, for a decision (modes a, r, l, p), "/" and the server time in
--     µs past which the client has given the call up, if it knows one.
--   - ARGV[3]: the number of limits n.
--   - ARGV[4]: the permit record lifetime in ms, or "" for no permit key.
--   - ARGV[5]: mode r: the longest wait in µs a reservation may have.
--     Otherwise the lease share: a lease takes at most floor(level/share) beyond
--     its minimum.
--   - ARGV[6]: the client's view, used only when the key is missing:
--     "t tok_1 ... tok_n", the levels it last saw and the server time it
--     saw them at; the key comes back at those levels refilled since, no
--     fuller (a restart or an eviction must not mint a full bucket), and
--     no deeper in debt than reservations may queue (a lost queue of
--     reservations comes back with the key). "" for none.
--   - ARGV[7]: tokens granted without Redis to charge first, "c_1 ... c_n",
--     or "": a process back from its failure policy reconciles what it
--     spent meanwhile. The charge stops at a debt of one capacity (one
--     below the queued reservations: owe). A negative c_i gives -c_i back,
--     as mode s does (never above the capacity): settlements a process
--     carries on its next call instead of a call of their own. A process
--     back from its failure policy puts a head before them, "b<from>
--     <width> <k>" and k slots of n grants: when it fell back (server µs),
--     and what it granted in each width µs from then (see the charges
--     below); "B<from>" when its failure policy grants without Redis.
--   - ARGV[8], ARGV[9]: a fleet member id and the registration's lifetime
--     in ms, or "": the member is registered in the fleet key (a sorted
--     set scored by expiry) and the reply counts the live members.
--   - ARGV[10+6(i-1)...]: per limit i: capacity, num, den, unit (µs), a, b.
--     The limit refills num tokens every den units. Modes a and p: a is the
--     cost (0 leaves the limit out). Mode l: a is the minimum and b the most
--     to take. Mode s: a is the estimate taken, b the actual.
--
-- Reply: {status, wait_us, amount, now, flags, live, paused, tok_1, rem_1, ...,
-- tok_n, rem_n} where status is 1 granted (or settled; for mode r reserved,
-- granted wait_us from now), 0 denied (wait_us
-- until it could pass; for a lease granted short of its most, until the
-- most could be had), -1 denied forever (a limit without refill cannot
-- cover its cost), 2 the permit was already applied (idempotent retry).
-- amount is the lease size (for mode s, the first limit, from 1, whose
-- charge stopped at a debt of one capacity; 0 for none; for mode r, 1 <<
-- (i-1) for each limit i (i <= 50) left to be taken at the instant), now
-- the time the
-- script used, flags 1 when a
-- garbage state was reset and 2 when the key was rebuilt from the client's
-- view, plus 4 << (i-1) when limit i (i <= 50) runs at a server's quota
-- (mode t), live the fleet's live members (0 when not registering),
-- paused the end of a pause in force (mode d), in µs, or 0; then, when
-- the keys hold the sequence key (below), the call's number. A decision
-- past its deadline (ARGV[2]) replies {3, now} and changes nothing.

local A = ARGV
local mode = 'F'
if #A > 6 then
  -- The general path's first argument is its mode, a letter; a batch's
  -- is its capacity, a number.
  mode = A[1]
  if string.byte(mode) < 58 then mode = 'B' end
end
-- struct (Redis, Valkey) packs the state in binary; a server without it
-- (miniredis) gets the same numbers as text, and no fast path.
local S = rawget(_G, 'struct')
if S == nil and mode == 'F' then mode = 'f' end

-- The fast path, five arguments (six in tests): {cap, num, den, cost,
-- view, time or nothing} for one limit counted in µs, an acquisition
-- without permit, charge or registration. When the state is well-formed
-- and in this process's units (or there is no key and no view) it decides
-- in straight-line code, no closures and no tables but the reply {status,
-- wait_us, now, tok}; anything else falls through to the general path,
-- which decides the same and replies {status, wait_us, now, tok, flags}.
-- Tests pin the two, and the script this one replaced, to the same replies
-- on random steps.
--
-- A batch (mode B) is the fast path's k acquisitions coalesced into one
-- call, {cap, num, den, cost_1, view, time or '', cost_2, ..., cost_k}, and
-- runs the same lines: decided in order at one instant, each exactly as k
-- fast-path calls at that instant would be (a grant spends, a refusal
-- spends nothing and the next is still tried), with one write for the lot.
-- Its reply is {now, status_1, wait_1, tok_1, ..., status_k, wait_k,
-- tok_k}, or {-2} when the state needs the general path (a missing key
-- with a view, garbage, another den, no struct): the client then sends
-- each acquisition alone. TestBatchMatchesSequential holds a batch to the
-- calls it stands for.
if mode == 'B' and S == nil then return {-2} end
if mode == 'F' or mode == 'B' then
  local now
  if A[6] and A[6] ~= '' then
    now = tonumber(A[6])
  else
    local t = redis.call('TIME')
    now = t[1] * 1000000 + t[2]
  end
  repeat
    local cap, num, den = tonumber(A[1]), tonumber(A[2]), tonumber(A[3])
    -- pcall: a key of another type (a hash, another program's key) is an
    -- error reply, a table whose length is 0, which the general path resets.
    local raw = redis.pcall('GET', KEYS[1])
    local tok, rem = cap, 0
    if raw then
      if #raw ~= 32 then break end
      local st, sv, sr, sd = S.unpack('<dddd', raw)
      -- Written so that NaN, infinities and fractions fail.
      if not (sd == den and st <= now and st >= 0 and st % 1 == 0 and sv >= -cap and sv <= 1125899906842624
        and sv % 1 == 0 and sr >= 0 and sr < den and sr % 1 == 0) then break end
      tok, rem = sv, sr
      if tok >= cap then
        tok, rem = cap, 0
      elseif num > 0 and now > st then
        local e = now - st
        local need = (cap - tok) * den - rem
        local q = math.floor(need / num)
        local r = need - q * num
        if r < 0 then q = q - 1 r = r + num elseif r >= num then q = q + 1 r = r - num end
        if r > 0 then q = q + 1 end
        if e >= q then
          tok, rem = cap, 0
        else
          local x = rem + num * e
          q = math.floor(x / den)
          r = x - q * den
          if r < 0 then q = q - 1 r = r + den elseif r >= den then q = q + 1 r = r - den end
          tok, rem = tok + q, r
        end
      end
    elseif A[5] ~= '' then
      -- The client saw the bucket below full: the general path rebuilds it.
      break
    end
    -- The costs in order: A[4], then, in a batch, A[7] on. The fast path
    -- builds no table here; a batch gathers its replies in out.
    local out
    if mode == 'B' then out = {now} end
    local status, wait, spent = 0, 0, false
    for i = 4, #A do
      if i < 5 or i > 6 then
        local cost = tonumber(A[i])
        if tok >= cost then
          tok = tok - cost
          spent = true
          status, wait = 1, 0
        elseif num == 0 then
          status, wait = -1, 0
        else
          local need = (cost - tok) * den - rem
          local q = math.floor(need / num)
          local r = need - q * num
          if r < 0 then q = q - 1 r = r + num elseif r >= num then q = q + 1 r = r - num end
          if r > 0 then q = q + 1 end
          if q > 4503599627370496 then q = 4503599627370496 end
          status, wait = 0, q
        end
        if out then
          local o = #out
          out[o + 1], out[o + 2], out[o + 3] = status, wait, tok
        end
      end
    end
    if spent then
      local v = S.pack('<dddd', now, tok, rem, den)
      if num == 0 then
        redis.call('SET', KEYS[1], v)
      else
        local need = (cap - tok) * den - rem
        local q = math.floor(need / num)
        local r = need - q * num
        if r < 0 then q = q - 1 r = r + num elseif r >= num then q = q + 1 r = r - num end
        if r > 0 then q = q + 1 end
        if q > 35184372088832 then
          redis.call('SET', KEYS[1], v)
        else
          local at = now + q
          local ms = math.floor(at / 1000)
          if ms * 1000 < at then ms = ms + 1 end
          redis.call('SET', KEYS[1], v, 'PXAT', ms + 1)
        end
      end
    end
    if out then return out end
    return {status, wait, now, tok}
  until true
  if mode == 'B' then return {-2} end
end

if mode == 'F' or mode == 'f' then
  local now = ARGV[6] or ''
  -- Fall through: rewrite the arguments in the general layout.
  if now ~= '' then now = string.format('%d', now) end
  A = {'a', now, '1', '', '1', A[5], '', '', '', A[1], A[2], A[3], '1', A[4], '0', fast = true}
  mode = 'a'
end

local now
local ta, da = string.match(A[2], '^(%d*)/?(%d*)$')
if ta and ta ~= '' then
  now = tonumber(ta)
else
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
-- A decision that reaches the script after its deadline was given up by
-- its client, which decided without Redis meanwhile and will send again
-- what it carries: applied now, it would take tokens for no call, and its
-- write would hide that the fleet had no Redis (the back key, below).
-- Calls a server held (SIGSTOP, a long fork) all arrive at once when it
-- resumes. Nothing is read or written: {3, now}.
if da and da ~= '' and now > tonumber(da) then return {3, now} end
local n = tonumber(A[3])
local flags = 0

-- The sequence key, when the keys hold one more than the permit, back and
-- fleet keys call for (after the state and the permit key): the call
-- takes the next number, and the reply ends with it. A reservation's and
-- a give-back's numbers order them as the script ran them, which a client
-- with both in flight at once cannot tell from its side, so that its
-- sleepers move for exactly the give-backs applied after their
-- reservations. Lost with the key (a restart, a day idle), the numbers
-- start again below the sleepers': they then move for nothing, as before.
local seq = 0
do
  local k = 2
  if A[4] ~= '' then k = 3 end
  local want = k - 1
  local h = string.sub(A[7], 1, 1)
  if h == 'b' or h == 'B' then want = want + 1 end
  if A[8] ~= '' then want = want + 1 end
  if #KEYS > want then
    seq = redis.call('INCR', KEYS[k])
    redis.call('PEXPIRE', KEYS[k], 86400000)
  end
end

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

-- deep returns the deepest debt limit l may hold: reservations (mode r)
-- queue below zero, and from there every product this script forms,
-- (cap - tok) * den + num at most, stays below 2^52. The shape's check
-- (2 * cap * den + den + num within 2^52) makes it at least one capacity;
-- a level stays within 2^50 (int, below).
local function deep(l)
  local d = divmod(4503599627370496 - l.den - l.num, l.den) - l.cap
  if d > 1125899906842624 then d = 1125899906842624 end
  if d < l.cap then d = l.cap end
  return d
end

-- owe returns the lowest level a charge may take limit l to: one capacity
-- of debt, or one capacity below the reservations queued there, and never
-- above the level it is at (forgiving a charge must not mint a token).
local function owe(l)
  local f = -l.cap
  if l.tok < f then f = math.max(l.tok - l.cap, -deep(l)) end
  return math.min(f, l.tok)
end

-- int returns x as an integer within +-2^50 (levels), or within 0..2^53
-- for a time, or nil.
local function int(x, time)
  x = tonumber(x)
  if x == nil or x ~= x or x % 1 ~= 0 then return nil end
  if time then
    if x < 0 or x > 9007199254740992 then return nil end
  elseif x > 1125899906842624 or x < -1125899906842624 then
    return nil
  end
  return x
end

local L = {}
for i = 1, n do
  local b = 4 + 6 * i
  L[i] = {cap = tonumber(A[b]), num = tonumber(A[b + 1]), den = tonumber(A[b + 2]),
    unit = tonumber(A[b + 3]), a = tonumber(A[b + 4]), b = tonumber(A[b + 5])}
  L[i].cfg = {L[i].cap, L[i].num, L[i].den, L[i].unit}
end

-- shape sets the limit l runs at: its configuration from the arguments,
-- or, while a server's lower quota is stored for it (l.tuned: cap, num,
-- den, unit, since, untl, see mode t), the lower capacity and the lower
-- rate of the two. (Rates compared as doubles: a choice, not a level.)
local function shape(l)
  local c = l.cfg
  l.cap, l.num, l.den, l.unit = c[1], c[2], c[3], c[4]
  local t = l.tuned
  if t == nil then return end
  if t.cap < l.cap then l.cap = t.cap end
  if t.num / (t.den * t.unit) < l.num / (l.den * l.unit) then
    l.num, l.den, l.unit = t.num, t.den, t.unit
  end
end

-- refill adds the whole units elapsed from last to now; time that runs
-- backwards adds nothing.
local function refill(l, last)
  if l.tok >= l.cap then
    l.tok = l.cap
    l.rem = 0
  elseif l.num > 0 and now > last then
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
end

-- clientView returns the client's view (ARGV[6]) as its server time and
-- its levels, each no deeper in debt than reservations may queue; nil for
-- none, or for one malformed or ahead of the script's clock. Parsed once:
-- a key rebuilt from it and the return's record (hintTails) both read it.
local viewRead, viewAt, viewLevels
local function clientView()
  if viewRead then return viewAt, viewLevels end
  viewRead = true
  local h = {}
  for x in string.gmatch(A[6], '%S+') do h[#h + 1] = int(x, #h == 0) end
  local ht = h[1]
  if ht == nil or #h ~= n + 1 or ht > now then return nil end
  local lv = {}
  for i = 1, n do lv[i] = math.max(h[i + 1], -deep(L[i])) end
  viewAt, viewLevels = ht, lv
  return ht, lv
end

-- A key of another type (WRONGTYPE: a hash of an earlier state format,
-- another program's key) is garbage like any other: the SET in save()
-- replaces it whatever its type.
local raw = redis.pcall('GET', KEYS[1])
local last
-- hold: no grant before it, whatever the levels (a pause that refills,
-- mode d); 0 for none.
local hold = 0
if raw then
  local f = {}
  local ok
  if type(raw) ~= 'string' then
    ok = false
  elseif S then
    ok = #raw >= 32 and #raw % 24 == 8
    if ok then
      f = {S.unpack('<' .. string.rep('d', #raw / 8), raw)}
      f[#f] = nil -- unpack's last value is the next position
    end
  else
    for x in string.gmatch(raw, '%S+') do f[#f + 1] = x end
    ok = #f >= 4 and #f % 3 == 1
  end
  if ok then
    last = int(f[1], true)
    ok = last ~= nil and last <= now + 60000000
  end
  -- m level triples; a state that carries servers' quotas (written by
  -- save, below) has 4 + 9m numbers: t, the m triples, the marker triple
  -- hold 0 -1 (never a level: its den is below 1; hold the end of a pause
  -- that refills, or 0) and per limit six numbers, cap num den unit since
  -- untl, all 0 for a limit without one. A process of an earlier version
  -- reads the levels and not what follows them.
  local m = (#f - 1) / 3
  if ok then
    local k = (#f - 4) / 9
    if k >= 1 and k % 1 == 0 and tonumber(f[3 * k + 4]) == -1 and tonumber(f[3 * k + 3]) == 0 then
      m = k
      local h = int(f[3 * k + 2], true)
      -- A pause is at most a minute (mode d): a hold beyond is garbage.
      if h == nil or h > now + 60000000 then ok = false elseif h > now then hold = h end
      for i = 1, k do
        local b = 3 * k + 5 + 6 * (i - 1)
        local tc, tn, td, tu = int(f[b]), int(f[b + 1]), int(f[b + 2]), int(f[b + 3])
        local ts, te = int(f[b + 4], true), int(f[b + 5], true)
        if tc == nil or tn == nil or td == nil or tu == nil or ts == nil or te == nil then
          ok = false
          break
        end
        if tc ~= 0 then
          -- Exact as a configured shape is (shape.go), for this process's
          -- capacity: a written quota is exact for its writer's.
          if tc < 1 or tn < 1 or td < 1 or (tu ~= 1 and tu ~= 1000 and tu ~= 1000000)
            or L[i] and 2 * L[i].cfg[1] * td + td + tn > 4503599627370496 then
            ok = false
            break
          end
          if te > now and L[i] then
            L[i].tuned = {cap = tc, num = tn, den = td, unit = tu, since = ts, untl = te}
            shape(L[i])
          end
        end
      end
    end
  end
  if ok then
    for i = 1, n do
      local l = L[i]
      local j = 3 * i - 1
      if i > m then
        l.tok, l.rem = l.cap, 0
      else
        local tok, rem, den = int(f[j]), int(f[j + 1]), int(f[j + 2])
        if tok == nil or rem == nil or den == nil or den < 1 or rem < 0 or rem >= den then
          ok = false
          break
        end
        if den ~= l.den then rem = 0 end
        if tok < -deep(l) then tok, rem = -deep(l), 0 end
        l.tok, l.rem = tok, rem
      end
    end
  end
  if not ok then
    flags = 1
    last = now
    hold = 0
    for i = 1, n do
      L[i].tuned = nil
      shape(L[i])
      L[i].tok, L[i].rem = 0, 0
    end
  end
  for i = 1, n do refill(L[i], last) end
else
  local ht, lv = clientView()
  for i = 1, n do
    local l = L[i]
    l.tok, l.rem = l.cap, 0
    if lv and lv[i] < l.cap then
      flags = 2
      l.tok = lv[i]
      refill(l, ht)
    end
  end
  last = now
end

-- stored: when the key was last written (now for a key lost or reset).
local stored = last

-- hintTails returns, per limit, the server instant in µs at which the
-- debt of the client's view (ARGV[6]) is refilled on the script's grid, 0
-- for a limit the view leaves out of debt; nil for no usable view.
local function hintTails()
  local ht, lv = clientView()
  if not ht then return nil end
  local t = {}
  for i = 1, n do
    local l, v = L[i], lv[i]
    t[i] = 0
    if v < 0 and l.num > 0 then
      t[i] = (divmod(ht, l.unit) + ceildiv(-v * l.den, l.num)) * l.unit
    end
  end
  return t
end

if A[7] ~= '' then
  local cs = {}
  for x in string.gmatch(A[7], '%S+') do cs[#cs + 1] = x end
  -- A return: while the whole fleet had no Redis, each process granted
  -- its share of what the key refilled. The first back (the key lost, or
  -- not written since it fell back, and grants to charge or a policy
  -- that grants without Redis) records the
  -- instant in the back key (same slot, before the fleet key) and takes
  -- the key as at most empty, which counts what the fleet's shares granted
  -- until then; grants in slots that ended by then are forgiven, or that
  -- refill would count twice, and the rest, granted while others were
  -- back on Redis, is charged. A process that alone lost Redis (the key
  -- written since it fell back, no return recorded) is charged in full.
  local forgive, first = {}, 1
  local head = string.byte(A[7])
  if head == 98 or head == 66 then
    local from, width, k = int(string.sub(cs[1], 2), true), int(cs[2], true), int(cs[3], true)
    if from == nil or width == nil or k == nil or #cs < 3 + k * n then
      cs = {}
    else
      first = 4 + k * n
      -- B: the returning process's policy grants without Redis, and so
      -- may the others': what refilled while the key was frozen may
      -- have been spent, whether or not this process did.
      local granted = head == 66
      for j = 4, first - 1 do
        if (int(cs[j]) or 0) > 0 then granted = true end
      end
      local bk = KEYS[#KEYS]
      if A[8] ~= '' then bk = KEYS[#KEYS - 1] end
      -- The back key: "<instant>", and for a key rebuilt from a view in
      -- debt, " <tail_1> ... <tail_n>": when the queue that view held
      -- was refilled, per limit (hintTails).
      local bv, bf = redis.pcall('GET', bk), {}
      if type(bv) == 'string' then
        for x in string.gmatch(bv, '%S+') do bf[#bf + 1] = x end
      end
      local back = int(bf[1], true)
      if back == nil or back <= from or back > now then
        back = nil
        if from <= now and (not raw or (stored <= from and granted)) then
          back = now
          local rec = string.format('%d', now)
          local t = flags == 2 and hintTails()
          if t then
            for i = 1, n do rec = rec .. string.format(' %d', t[i]) end
          end
          redis.call('SET', bk, rec, 'PX', 600000)
          for i = 1, n do
            local l = L[i]
            if l.tok > 0 or (l.tok == 0 and l.rem > 0) then l.tok, l.rem = 0, 0 end
          end
        end
      elseif #bf == n + 1 then
        -- A later return to a key rebuilt from the first one's view: a
        -- view that held the lost queue longer (the first one's may be
        -- older, from before the fleet's queue grew) puts what the first
        -- left out before every reservation still to come. Reservations
        -- made since the rebuild keep their instants.
        local t = hintTails()
        if t then
          local moved = false
          for i = 1, n do
            local l, old = L[i], int(bf[i + 1], true) or 0
            if t[i] > old then
              moved = true
              bf[i + 1] = string.format('%d', t[i])
              local units = divmod(t[i], l.unit) - divmod(math.max(old, now), l.unit)
              if units > 0 then
                local q, r = divmod(l.rem - l.num * units, l.den)
                l.tok, l.rem = math.max(l.tok + q, -deep(l)), r
              end
            end
          end
          if moved then redis.call('SET', bk, table.concat(bf, ' '), 'KEEPTTL') end
        end
      end
      if back and width > 0 then
        for j = 1, k do
          if from + j * width <= back then
            for i = 1, n do
              forgive[i] = (forgive[i] or 0) + math.max(int(cs[3 + (j - 1) * n + i]) or 0, 0)
            end
          end
        end
      end
    end
  end
  for j = first, #cs do
    local i = j - first + 1
    local l, c = L[i], int(cs[j])
    if l and c and c > 0 and forgive[i] then c = c - math.min(forgive[i], c) end
    if l and c and c > 0 then
      l.tok = math.max(l.tok - c, owe(l))
    elseif l and c and c < 0 then
      -- A give-back, as mode s gives it: never above the capacity.
      l.tok = l.tok - c
      if l.tok >= l.cap then l.tok, l.rem = l.cap, 0 end
    end
  end
end

local live = 0
if A[8] ~= '' then
  -- The key is written out in each call, not kept in a local: some
  -- cluster proxies accept only keys they can see taken from KEYS.
  local ms = math.floor(now / 1000)
  local ttl = tonumber(A[9])
  -- A fleet key of another type would fail every registration
  -- (WRONGTYPE): it is replaced, and the registrations rebuild it within
  -- one lifetime. (The limits are untouched: no flag.)
  local ft = redis.call('TYPE', KEYS[#KEYS])
  if ft.ok ~= 'zset' and ft.ok ~= 'none' then redis.call('DEL', KEYS[#KEYS]) end
  redis.call('ZADD', KEYS[#KEYS], ms + ttl, A[8])
  redis.call('ZREMRANGEBYSCORE', KEYS[#KEYS], '-inf', ms)
  redis.call('PEXPIRE', KEYS[#KEYS], ttl)
  live = redis.call('ZCARD', KEYS[#KEYS])
end

-- ahead is how long the stored time is ahead of the clock: nothing
-- refills before it.
local ahead = 0
if last > now then ahead = last - now end

-- wait returns the µs until limit l holds cost tokens, or -1 for never.
local function wait(l, cost)
  -- A level refilled over a pause (mode d) is there only at its end.
  if l.tok >= cost then return math.max(hold - now, 0) end
  if l.num == 0 then return -1 end
  local w = ceildiv((cost - l.tok) * l.den - l.rem, l.num)
  -- Waits past 2^52 µs (142 years) are reported as that.
  if w > 4503599627370496 / l.unit then return 4503599627370496 end
  if l.unit == 1 then return w + ahead end
  local _, r = divmod(math.max(now, last), l.unit)
  return w * l.unit - r + ahead
end

local function reply(status, w, amount)
  -- Flags 4, 8, 16, ...: limit 1, 2, 3, ... runs at a server's quota.
  local flags = flags
  for i = 1, math.min(n, 50) do
    if L[i].tuned then flags = flags + 4 * 2 ^ (i - 1) end
  end
  if A.fast then
    -- A fast call that fell through: its reply layout, and flags as a
    -- fifth value; the end of a pause in force (as paused below), if
    -- any, as a sixth, so that a process deciding on the fast path hears
    -- of the pause that holds it.
    if hold > now then return {status, w, now, L[1].tok, flags, hold} end
    return {status, w, now, L[1].tok, flags}
  end
  -- The end of a pause (mode d) the levels are held for, or 0: a
  -- process that reserved before the pause learns of it here and moves
  -- its sleepers' instants past it.
  -- (Not a stored time ahead of the clock: calls in flight together, or
  -- a server clock that went back, put it there without a pause.)
  local paused = 0
  if hold > now then paused = hold end
  local out = {status, w, amount, now, flags, live, paused}
  for i = 1, n do
    local l = L[i]
    out[#out + 1] = l.tok
    -- The fraction in the configuration's units, which the client reads
    -- it in (rounded down: a report, not a level).
    if l.den == l.cfg[3] then out[#out + 1] = l.rem else out[#out + 1] = math.floor(l.rem / l.den * l.cfg[3]) end
  end
  if seq > 0 then out[#out + 1] = seq end
  return out
end

local function save()
  local t = math.max(now, last)
  local ttl = 0
  local parts = {}
  if S then parts[1] = S.pack('<d', t) else parts[1] = string.format('%d', t) end
  for i = 1, n do
    local l = L[i]
    if S then
      parts[i + 1] = S.pack('<ddd', l.tok, l.rem, l.den)
    else
      parts[i + 1] = string.format(' %d %d %d', l.tok, l.rem, l.den)
    end
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
  local tuned = false
  for i = 1, n do
    local tn = L[i].tuned
    if tn then
      tuned = true
      -- The key holds a server's quota until it ends.
      if ttl >= 0 and tn.untl - t > ttl then ttl = tn.untl - t end
    end
  end
  if hold > now then
    tuned = true
    if ttl >= 0 and hold - t > ttl then ttl = hold - t end
  end
  if tuned then
    local h = 0
    if hold > now then h = hold end
    if S then parts[#parts + 1] = S.pack('<ddd', h, 0, -1) else parts[#parts + 1] = string.format(' %d 0 -1', h) end
    for i = 1, n do
      local tn = L[i].tuned or {cap = 0, num = 0, den = 0, unit = 0, since = 0, untl = 0}
      if S then
        parts[#parts + 1] = S.pack('<dddddd', tn.cap, tn.num, tn.den, tn.unit, tn.since, tn.untl)
      else
        parts[#parts + 1] = string.format(' %d %d %d %d %d %d', tn.cap, tn.num, tn.den, tn.unit, tn.since, tn.untl)
      end
    end
  end
  if ttl == 0 then
    -- Every limit is full, which is what a missing key means.
    if raw then redis.call('DEL', KEYS[1]) end
    return
  end
  local v = table.concat(parts)
  if ttl < 0 then
    -- Never full, or not for over a year (2^45 µs): no expiry.
    redis.call('SET', KEYS[1], v)
  else
    -- Expire when the limits are full again, on the clock the script uses.
    -- Round up and add 1 ms: expiring early would mint tokens.
    -- From the stored time if the clock went back: nothing refills before it.
    redis.call('SET', KEYS[1], v, 'PXAT', ceildiv(t + ttl, 1000) + 1)
  end
end

-- Mode d: what a server said, applied for the whole fleet. Per limit, a
-- is 1 to lower the level to at most b (never raising it, never below one
-- capacity of debt); ARGV[5], when above 0, pauses every limit for that
-- many µs (at most a minute, the stored time's bound): every level is
-- lowered to at most 0 and the stored time moves ahead to the pause's
-- end, before which nothing refills, so that the limits are released at
-- their rate from empty when it ends. A level is lowered as of now: the
-- pause's end still lies ahead for a process that hears a count meanwhile.
--
-- A limit at a server's quota (mode t) is the server's bucket as the
-- client sees it, and the server refills it while it holds the client
-- off: its level at the pause's end is what it had, or what it is
-- lowered to now, refilled over the pause at that quota. So the fleet
-- spends at the pause's end what the server banked meanwhile, no more.
if mode == 'd' then
  local pause = tonumber(A[5])
  local from = math.max(now, last) -- the instant the stored levels are at
  local untl = last
  if pause > 0 then untl = math.max(last, now + math.min(pause, 60000000)) end
  local refills = false
  for i = 1, n do
    local l = L[i]
    if l.tuned and untl > from then
      refill(l, now - (untl - from))
      refills = true
    end
    local to = nil
    if l.a == 1 then to = math.max(l.b, -l.cap) end
    if pause > 0 and (to == nil or to > 0) then to = 0 end
    if to ~= nil then
      local v = {tok = to, rem = 0, cap = l.cap, num = l.num, den = l.den, unit = l.unit}
      if l.tuned and untl > now then refill(v, now - (untl - now)) end
      if l.tok > v.tok or (l.tok == v.tok and l.rem > v.rem) then l.tok, l.rem = v.tok, v.rem end
    end
  end
  last = math.max(last, untl)
  -- Every limit held until the pause's end, those refilled over it too;
  -- the hold is stored, so that replies can name the pause.
  if refills or pause > 0 then hold = math.max(hold, untl) end
  save()
  return reply(1, 0, 0)
end

-- Mode t: a server's size of limit i (ARGV[10+6n]), as the shape the
-- client computed for it, ARGV[11+6n...]: cap num den unit (cap 0: the
-- server allows the configured limit or more), then the lifetime in ms and
-- the hold in µs. A lower quota applies at once, for every process on the
-- key, from their next decision on: the level is capped at the new
-- capacity (its fraction dropped when the unit changes) and refills at the
-- new rate; it is stored with the state until untl, which a report of the
-- same quota extends. A higher one (or the configuration) applies only
-- once the lower has stood for the hold, since responses the server sent
-- before it lowered its quota may still arrive: status 0 then.
if mode == 't' then
  local b = 10 + 6 * n
  local l = L[tonumber(A[b])]
  local tc, tn, td, tu = tonumber(A[b + 1]), tonumber(A[b + 2]), tonumber(A[b + 3]), tonumber(A[b + 4])
  local ttl, holdFor = tonumber(A[b + 5]) * 1000, tonumber(A[b + 6])
  if l == nil then return reply(1, 0, 0) end
  local c, t = l.cfg, l.tuned
  local new = c[2] / (c[3] * c[4])
  if tc > 0 then new = tn / (td * tu) end
  if t and new > l.num / (l.den * l.unit) and now - t.since < holdFor then
    return reply(0, 0, 0)
  end
  local den = l.den
  if tc == 0 then
    if t == nil then return reply(1, 0, 0) end
    l.tuned = nil
  elseif t and t.cap == tc and t.num == tn and t.den == td and t.unit == tu then
    t.untl = math.max(t.untl, now + ttl)
  else
    l.tuned = {cap = tc, num = tn, den = td, unit = tu, since = now, untl = now + ttl}
  end
  shape(l)
  if l.den ~= den then l.rem = 0 end
  if l.tok >= l.cap then l.tok, l.rem = l.cap, 0 end
  if l.tok < -deep(l) then l.tok, l.rem = -deep(l), 0 end
  save()
  return reply(1, 0, 0)
end

if mode == 's' then
  if redis.call('GET', KEYS[2]) == 's' then
    if flags ~= 0 or A[7] ~= '' then save() end
    return reply(2, 0, 0)
  end
  -- capped: the first limit (1-based) whose charge stopped at the debt
  -- bound, reported to the caller as an error; 0 for none.
  local capped = 0
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
      -- Debt is bounded (owe), which bounds every product above.
      local f = owe(l)
      if l.tok - d < f and capped == 0 then capped = i end
      l.tok = math.max(l.tok - d, f)
    end
  end
  save()
  redis.call('SET', KEYS[2], 's', 'PX', tonumber(A[4]))
  return reply(1, 0, capped)
end

local permit = A[4] ~= ''

-- Mode c: a reservation (mode r) given back before its instant, the
-- reservation's server time and the levels its reply carried (tok rem per
-- limit) in ARGV[10+6n...]. Each limit gets back the cost less what was
-- taken after the reservation (its own level refilled to now, less the
-- level now), so that no later reservation's instant is overtaken: the
-- queue behind it keeps its place, and only a reservation at the tail
-- gives back all it took. A limit whose shape changed since gets nothing.
if mode == 'c' then
  if permit and redis.call('GET', KEYS[2]) == 's' then
    if flags ~= 0 or A[7] ~= '' then save() end
    return reply(2, 0, 0)
  end
  local b = 10 + 6 * n
  local at = int(A[b], true)
  for i = 1, n do
    local l = L[i]
    local pt, pr = int(A[b + 2 * i - 1]), int(A[b + 2 * i])
    if l.a > 0 and at and pt and pr and at <= now and l.den == l.cfg[3] and pr >= 0 and pr < l.den
      and pt >= -deep(l) and pt <= l.cap then
      local v = {tok = pt, rem = pr, cap = l.cap, num = l.num, den = l.den, unit = l.unit}
      refill(v, at)
      local after = (v.tok - l.tok) * l.den + v.rem - l.rem
      local back = l.a - ceildiv(math.max(after, 0), l.den)
      if back > 0 then
        l.tok = l.tok + back
        if l.tok >= l.cap then l.tok, l.rem = l.cap, 0 end
      end
    end
  end
  save()
  if permit then redis.call('SET', KEYS[2], 's', 'PX', tonumber(A[4])) end
  return reply(1, 0, 0)
end

if permit and redis.call('EXISTS', KEYS[2]) == 1 then
  if flags ~= 0 or A[7] ~= '' then save() end
  -- A retried reservation learns its instant again.
  local w, later = 0, 0
  if mode == 'r' then
    local at, bits = string.match(redis.call('GET', KEYS[2]) or '', '^(%d+):?(%d*)$')
    at = tonumber(at)
    if at and at > now then w = at - now end
    later = tonumber(bits) or 0
  end
  return reply(2, w, later)
end

local w = 0
for i = 1, n do
  local l = L[i]
  if l.a > 0 then
    -- A cost above a capacity lowered to a server's quota waits for a
    -- full bucket (the client's configuration admits it).
    local wi = wait(l, math.min(l.a, l.cap))
    if wi < 0 then
      w = -1
      break
    end
    if wi > w then w = wi end
  end
end
if mode == 'p' then
  if flags ~= 0 or A[7] ~= '' then save() end
  if w < 0 then return reply(-1, 0, 0) end
  return reply(w == 0 and 1 or 0, w, 0)
end
-- Mode r: a reservation. The costs are taken now, below zero if need be,
-- and the reply's wait is the instant they are covered: the level after
-- every reservation is the fleet's queue, so instants follow arrival order
-- and every window sees at most cap + rate * w of them, as with grants.
-- ARGV[5] is the longest wait the caller can use (its deadline): a
-- reservation that would end later is not made (status 0, the wait), nor
-- one that would take a level below its deepest debt (the wait until it
-- could be made outright).
--
-- Each limit is taken from as at the instant, not now: a bucket that would
-- be full by then (a limit that does not bind, or the first burst) refills
-- nothing past its capacity meanwhile, and the server takes the cost only
-- when the call arrives. So a limit is first lowered to at most its
-- capacity less what it refills from the stored time to the instant, and
-- the take is stored from there; at the instant it holds what taking then
-- would leave. ARGV[10+6n] adds headroom for the wire, in µs: the call
-- arrives up to that much after its instant, and a server's bucket that is
-- full refills only from the arrival that leaves it. Arrivals delayed by
-- up to the headroom then fit capacity + rate * w in every window as the
-- server counts them. A reservation the lowering would take past the
-- deepest debt is not made.
if mode == 'r' and w >= 0 then
  local fits = w <= tonumber(A[5])
  local margin = int(A[10 + 6 * n], true) or 0
  local span = math.max(w + margin - ahead, 0)
  -- later marks (1, 2, 4, ... for limit 1, 2, 3, ...) the limits left to
  -- be taken at the instant (the reply's amount). A limit that does not
  -- bind and would be full long before the instant would have to be
  -- lowered below the cost to hold the take there: a queue that nothing
  -- on this limit makes, behind which every later call would wait, and
  -- which no give-back of the binding limit could shorten (a sleeper
  -- moved sooner by one would still be held by it). Such a limit is not
  -- taken now: the caller takes it with one more call at its instant,
  -- when it is a plain decision on a full bucket.
  local later = 0
  for i = 1, n do
    local l = L[i]
    if l.a > 0 and l.num > 0 then
      local need = (l.cap - l.tok) * l.den - l.rem
      local mu = ceildiv(span, l.unit)
      if need < l.num * math.min(mu, ceildiv(need, l.num) + 1) then
        -- The refill over the span passes the capacity: lower the level
        -- to what refills to exactly the capacity at the span's end.
        -- (Past lim units the level would go below the deepest debt; up
        -- to it every product stays below 2^52, as deep bounds them.)
        local lim = divmod((l.cap - l.a + deep(l)) * l.den, l.num)
        local pt, pr
        if mu <= lim then pt, pr = divmod(l.cap * l.den - l.num * mu, l.den) end
        if w > 0 and i <= 50 and (not pt or pt < l.a) then
          l.later = true
          later = later + 2 ^ (i - 1)
        elseif not pt then
          fits = false
        else
          l.tok, l.rem = pt, pr
        end
      end
    end
    if l.a > 0 and not l.later and l.tok - l.a < -deep(l) then fits = false end
  end
  if not fits then
    if flags ~= 0 or A[7] ~= '' then save() end
    return reply(0, w, 0)
  end
  for i = 1, n do
    if not L[i].later then L[i].tok = L[i].tok - L[i].a end
  end
  save()
  if permit then
    redis.call('SET', KEYS[2], string.format('%d:%d', now + w, later), 'PX', tonumber(A[4]))
  end
  return reply(1, w, later)
end

if w ~= 0 then
  -- A refusal writes only what it learned: a reset, a rebuilt key, a charge.
  if flags ~= 0 or A[7] ~= '' then save() end
  if w < 0 then return reply(-1, 0, 0) end
  return reply(0, w, 0)
end

local amount = 0
if mode == 'l' then
  local l = L[1]
  amount = math.max(l.a, math.min(l.b, (divmod(l.tok, tonumber(A[5])))))
  l.tok = l.tok - amount
  if amount < l.b then
    -- A short lease: tell the client when a full one could be had.
    w = wait(l, l.b)
  end
else
  for i = 1, n do
    L[i].tok = math.max(L[i].tok - L[i].a, -L[i].cap)
  end
end
save()
if permit then
  redis.call('SET', KEYS[2], 'o', 'PX', tonumber(A[4]))
end
return reply(1, w, amount)
