package redisstate

import "github.com/redis/go-redis/v9"

// Lua helpers shared by the scripts. A binding field "m:MODEL" holds
// "member|lastUsedMs"; a first pick in flight "p:MODEL" holds
// "member|sinceMs" and "r:MODEL" the calls sharing it. The load sorted set
// of a member ("n:POOL:MEMBER") has one entry "SESSIONKEY|MODEL" per
// binding or first pick, scored by when it expires, so a member's bound
// count is ZCARD after dropping the expired.
const luaHelpers = `
local function has(t, v) for _, x in ipairs(t) do if x == v then return true end end return false end
local function split(v) local p = string.find(v, '|', 1, true); return string.sub(v, 1, p - 1), tonumber(string.sub(v, p + 1)) end
`

// acquireCore is assign-if-unbound, the rules of
// balance's assigner.acquire in one atomic step, as the Lua function
// acquire(bk, ck, now, ttl, pickttl, model, sk, lp, elig, cand, members):
// a live binding whose member is eligible is reused and touched; else a
// running first pick of the key is joined; else the session's member for
// another unified model when it is a candidate; else the candidate with the
// fewest bound sessions, ties rotating from the pool's cursor. The new pick
// is recorded as a first pick in flight. bk is the binding hash, ck the
// cursor, sk the session key ("" → no binding), lp the load-key prefix,
// cand the hot eligible members. Returns {member, inFlight}.
const acquireCore = `
local function acquire(bk, ck, now, ttl, pickttl, model, sk, lp, elig, cand, members)
local zm, life = sk .. '|' .. model, ttl + pickttl
if sk ~= '' then
  local b = redis.call('HGET', bk, 'm:' .. model)
  if b then
    local m, last = split(b)
    if now - last < ttl and has(elig, m) then
      redis.call('HSET', bk, 'm:' .. model, m .. '|' .. now)
      redis.call('ZADD', lp .. m, now + ttl, zm)
      redis.call('PEXPIRE', lp .. m, life)
      redis.call('PEXPIRE', bk, life)
      return {m, 0}
    end
    if now - last >= ttl then redis.call('HDEL', bk, 'm:' .. model); redis.call('ZREM', lp .. m, zm) end
  end
  local f = redis.call('HGET', bk, 'p:' .. model)
  if f then
    local m, since = split(f)
    if now - since < pickttl and has(elig, m) then
      redis.call('HINCRBY', bk, 'r:' .. model, 1)
      redis.call('PEXPIRE', bk, life)
      return {m, 1}
    end
  end
end
local member = nil
if sk ~= '' then
  local all = redis.call('HGETALL', bk)
  for j = 1, #all, 2 do
    local k = all[j]
    if string.sub(k, 1, 2) == 'm:' and k ~= 'm:' .. model then
      local m, last = split(all[j + 1])
      if now - last < ttl and has(cand, m) then member = m; break end
    end
  end
end
if not member then
  local n = #members
  local cur = tonumber(redis.call('GET', ck) or '0') % n
  local idx = {}
  for j, m in ipairs(members) do idx[m] = j - 1 end
  local bl, bd = 0, 0
  for _, m in ipairs(cand) do
    redis.call('ZREMRANGEBYSCORE', lp .. m, '-inf', now)
    local l = redis.call('ZCARD', lp .. m)
    local d = (idx[m] - cur + n) % n
    if member == nil or l < bl or (l == bl and d < bd) then member, bl, bd = m, l, d end
  end
  redis.call('SET', ck, (idx[member] + 1) % n, 'PX', 86400000)
end
if sk == '' then return {member, 0} end
local old = redis.call('HGET', bk, 'p:' .. model)
if old then
  local om = split(old)
  if om ~= member then redis.call('ZREM', lp .. om, zm) end
end
redis.call('HSET', bk, 'p:' .. model, member .. '|' .. now)
redis.call('HINCRBY', bk, 'r:' .. model, 1)
redis.call('ZADD', lp .. member, 'GT', now + pickttl, zm)
redis.call('PEXPIRE', lp .. member, life)
redis.call('PEXPIRE', bk, life)
return {member, 1}
end
`

// listArg reads ARGV lists: list() returns the list at ARGV[i] (its
// length, then its items) and moves i past it.
const listArg = `
local i = 7
local function list() local n = tonumber(ARGV[i]); local t = {}; for j = 1, n do t[j] = ARGV[i + j] end; i = i + n + 1; return t end
`

// acquireScript is acquireCore on its own (State.Acquire). KEYS: binding
// hash, cursor. ARGV: now, ttl, pickTTL, model, session key, load-key
// prefix, then the eligible, the candidates (hot eligible) and all
// members, each list preceded by its length. Returns {member, inFlight}.
var acquireScript = redis.NewScript(luaHelpers + acquireCore + listArg + `
local elig, cand, members = list(), list(), list()
return acquire(KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], elig, cand, members)
`)

// beginScript is State.Begin in one step (one round trip
// before a call): it reads the cooldown hash of every eligible member and
// of its (member, target model) key, takes the members cooling in neither
// as candidates (all eligible when none is hot), picks the start
// member by the pool's strategy (sticky: acquireCore; round-robin: the
// shared cursor; failover: the first candidate) and reads a state key's
// owner. Reading and picking in one script also makes the pick atomic with
// the cooldowns it saw. KEYS: binding hash, cursor, owner key ("" none),
// then two cooldown hashes per eligible member (member, member/target).
// ARGV: as acquireScript's first six, then the strategy, then the eligible
// and all members, each list preceded by its length. Returns {member,
// inFlight, owner or nil, then u, c, s of each cooldown hash}.
var beginScript = redis.NewScript(luaHelpers + acquireCore + listArg + `
local now, strategy = tonumber(ARGV[1]), ARGV[7]
i = 8
local elig, members = list(), list()
local out, cand = {'', 0, false}, {}
for j, m in ipairs(elig) do
  local cooling = false
  for k = 0, 1 do
    local v = redis.call('HMGET', KEYS[2 + 2 * j + k], 'u', 'c', 's')
    local n = #out
    out[n + 1], out[n + 2], out[n + 3] = v[1], v[2], v[3]
    if v[1] and now < tonumber(v[1]) then cooling = true end
  end
  if not cooling then cand[#cand + 1] = m end
end
if #cand == 0 then cand = elig end
if strategy == 'failover' then
  out[1] = cand[1]
elseif strategy == 'round-robin' then
  local c = tonumber(redis.call('GET', KEYS[2]) or '0') % #cand
  redis.call('SET', KEYS[2], c + 1, 'PX', 86400000)
  out[1] = cand[c + 1]
else
  local r = acquire(KEYS[1], KEYS[2], now, tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], elig, cand, members)
  out[1], out[2] = r[1], r[2]
end
if KEYS[3] ~= '' then out[3] = redis.call('GET', KEYS[3]) end
return out
`)

// releaseScript ends a call (balance's assigner.release and bind): success
// becomes the key's binding (and the first pick follows it); inFlight drops
// one reference of the first pick, which goes when none is left. KEYS:
// binding hash. ARGV: now, ttl, pickTTL, model, session key, load-key
// prefix, success ("" none), inFlight ("1"/"0").
var releaseScript = redis.NewScript(luaHelpers + `
local now, ttl, pickttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local model, sk, lp, success, inflight = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local zm, life, bk = sk .. '|' .. model, ttl + pickttl, KEYS[1]
if success ~= '' then
  local b = redis.call('HGET', bk, 'm:' .. model)
  if b then
    local om = split(b)
    if om ~= success then redis.call('ZREM', lp .. om, zm) end
  end
  redis.call('HSET', bk, 'm:' .. model, success .. '|' .. now)
  redis.call('ZADD', lp .. success, now + ttl, zm)
  redis.call('PEXPIRE', lp .. success, life)
  local f = redis.call('HGET', bk, 'p:' .. model)
  if f then
    local fm, since = split(f)
    redis.call('HSET', bk, 'p:' .. model, success .. '|' .. since)
  end
end
if inflight == '1' and redis.call('HEXISTS', bk, 'r:' .. model) == 1 then
  if redis.call('HINCRBY', bk, 'r:' .. model, -1) <= 0 then
    local f = redis.call('HGET', bk, 'p:' .. model)
    redis.call('HDEL', bk, 'p:' .. model, 'r:' .. model)
    if f then
      local fm = split(f)
      local b = redis.call('HGET', bk, 'm:' .. model)
      if not b or split(b) ~= fm then redis.call('ZREM', lp .. fm, zm) end
    end
  end
end
if redis.call('EXISTS', bk) == 1 then redis.call('PEXPIRE', bk, life) end
return 1
`)

// mergeBindingScript writes a binding made while Redis was unreachable
// unless Redis has a live one for the key (first writer wins, SETNX-like).
// KEYS: binding hash. ARGV: now, ttl, model, session key, load-key prefix,
// member, lastUsed.
var mergeBindingScript = redis.NewScript(luaHelpers + `
local now, ttl, model, sk, lp, member, used = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], ARGV[6], tonumber(ARGV[7])
local b = redis.call('HGET', KEYS[1], 'm:' .. model)
if b then
  local m, last = split(b)
  if now - last < ttl then return 0 end
end
redis.call('HSET', KEYS[1], 'm:' .. model, member .. '|' .. used)
redis.call('ZADD', lp .. member, used + ttl, sk .. '|' .. model)
redis.call('PEXPIRE', lp .. member, ttl + 600000)
redis.call('PEXPIRE', KEYS[1], ttl + 600000)
return 1
`)

// failScript is balance's cooldowns.fail atomically: an
// explicit wait is used as is; a class without base has no cooldown; a
// failure soon after a cooldown ended (within max(last, base)) doubles the
// last length, capped at 10× base; a failure during a cooldown only extends
// it when its deadline is later (the longest deadline wins). KEYS: cooldown
// hash (u until ms, c class, l last length ms, s start ms of the running
// cooldown). ARGV: now, class, base ms,
// explicit ms. Returns the deadline (ms), 0 for none.
var failScript = redis.NewScript(`
local now, class, base, explicit = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local v = redis.call('HMGET', KEYS[1], 'u', 'l')
local u, last = tonumber(v[1] or '0'), tonumber(v[2] or '0')
local was = now < u
local d
if explicit > 0 then d = explicit
elseif base <= 0 then return 0
elseif last > 0 and not was and now - u <= math.max(last, base) then d = math.min(math.max(last * 2, base), base * 10)
else d = base end
if now + d > u then u = now + d; redis.call('HSET', KEYS[1], 'u', u, 'c', class) end
if not was then redis.call('HSET', KEYS[1], 's', now) end
if was then last = math.max(last, d) else last = d end
redis.call('HSET', KEYS[1], 'l', last)
redis.call('PEXPIRE', KEYS[1], (u - now) + math.max(last, base) + 60000)
return u
`)

// mergeCooldownScript merges a cooldown set while Redis was unreachable:
// the longest deadline wins, the growth length is the longer one. KEYS:
// cooldown hash. ARGV: now, until ms, class, last ms.
var mergeCooldownScript = redis.NewScript(`
local now, until, class, last = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local v = redis.call('HMGET', KEYS[1], 'u', 'l')
local u, l = tonumber(v[1] or '0'), tonumber(v[2] or '0')
if until > u then u = until; redis.call('HSET', KEYS[1], 'u', u, 'c', class) end
if now >= tonumber(v[1] or '0') then redis.call('HSET', KEYS[1], 's', now) end
l = math.max(l, last)
redis.call('HSET', KEYS[1], 'l', l)
redis.call('PEXPIRE', KEYS[1], math.max(u - now, 0) + l + 60000)
return u
`)

// rotateScript is round-robin's shared cursor: returns the index to use
// among n candidates and advances it. KEYS: cursor. ARGV: n.
var rotateScript = redis.NewScript(`
local n = tonumber(ARGV[1])
local c = tonumber(redis.call('GET', KEYS[1]) or '0') % n
redis.call('SET', KEYS[1], c + 1, 'PX', 86400000)
return c
`)
