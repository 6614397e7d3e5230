//! The shared schedule's scripts. Each runs atomically on the server and reads the
//! server's `TIME`; the client never sends its own clock.
//!
//! # Which scripts may run twice, and why that is safe
//!
//! A request can reach the server twice: the client's read times out on a stalled
//! server (or the reply is lost on the way back) and it sends the request again on
//! a new connection, and when the server comes back both copies run. So:
//!
//! - **SPEC** only reads: twice is the same as once.
//! - **JOIN, LEASE, CHANGE, BEAT, CLAIM, BARRIER** change the schedule, and each is made safe
//!   to deliver twice by a request number: the client sends `(owner, seq)` as the
//!   last two arguments, the same for every copy of one request (`owner` is the
//!   member and the script, `id:lease`; a join's is `j:RUNID`), and a new `seq` for
//!   the next request. The script stores its reply under `owner` in `P:r`; a copy
//!   whose `seq` is the stored one gets the stored reply and changes nothing. Each
//!   owner has one request in flight at a time (a lease, a claim, a heartbeat, a
//!   change: each serialized in the client), so the stored reply is always that of
//!   the request being repeated. Without it, a second LEASE leased tickets no one
//!   used or counted, a second CLAIM left a chunk owned by a process that never
//!   knew of it, a second BEAT added its counts twice, a second CHANGE installed two
//!   epochs.
//! - A member's stored replies go when it is pruned. Its TTL is above the client's
//!   grace plus two read timeouts, so a live client's repeat always finds its reply.
//!
//! Keys (one hash tag, so a Redis Cluster keeps them in one slot):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `P:s` | hash | the schedule: `gen` (the run's random id), `origin` (server µs at creation), the cycle range `c0`/`c1` and cursor `ccur`, the spec (`ver`, `rate`, `slice`, `strict`, `frac`, `paced`, `paused`, `stopped`), the epoch (`first`, `base`, `anchor`), the ticket `counter`, the global counts `missed`, `done`, `rerun`, `seen`, the start rate's `fslot` (the first slot any process could use: the first lease's first ticket after those it forfeited, set by that lease), `starts` and `lstart` (the latest start), the latest op end `last`, and the start barrier (`need`, `open`) |
//! | `P:m` | hash | member id → expiry (server µs) |
//! | `P:c` | hash | claim start → `end:owner:expiry:upto` (cycles before `upto` are done) |
//! | `P:l` | hash | member id → `leased:used`: tickets it leased, and used (granted or forfeited) as of its last call; a member that expires has the difference counted missed |
//! | `P:r` | hash | request owner (`id:lease`, `id:claim`, `id:beat`, `id:change`, `j:RUNID`) → `seq|reply`: the last reply, for a repeated request |
//! | `P:n` | channel | the spec's version after each change (the nudge) |
//!
//! Times inside are nanoseconds since `origin`, as Lua numbers (doubles): exact up to
//! 2^53 ns, 104 days of one schedule. `slice` is the client's `f64` written in its
//! shortest round-trip form, so `floor((k - first) * slice)` is the same double
//! operation here and in `super::slots`. Ticket and cycle numbers stay below 2^53.

use redis::Script;

/// The start every script shares: `now`, ns since the schedule's origin (or the
/// raw server µs as `now_us` when there is no schedule yet), and `fmt`, an integer
/// as a string without an exponent.
macro_rules! prelude {
    () => {
        r"
local function fmt(x) return string.format('%.0f', x) end
local tm = redis.call('TIME')
local now_us = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
local function since(origin) return (now_us - tonumber(origin)) * 1000 end
local function prune(s, m, l)
  local live = 0
  local all = redis.call('HGETALL', m)
  for i = 1, #all, 2 do
    if tonumber(all[i + 1]) < now_us then
      redis.call('HDEL', m, all[i])
      local led = redis.call('HGET', l, all[i])
      if led then
        local a, u = string.match(led, '^(%d+):(%d+)$')
        if a and tonumber(a) > tonumber(u) then redis.call('HINCRBY', s, 'missed', fmt(tonumber(a) - tonumber(u))) end
        redis.call('HDEL', l, all[i])
        -- What was counted, for a member that comes back alive (`back`).
        if a then redis.call('HSET', l, 'p' .. all[i], a .. ':' .. u) end
      end
      if KEYS[5] then
        for _, k in ipairs({'lease', 'claim', 'beat', 'change'}) do redis.call('HDEL', KEYS[5], all[i] .. ':' .. k) end
      end
    else
      live = live + 1
    end
  end
  return live
end
local function claim_of(v)
  local e, o, x, u = string.match(v, '^(%d+):(%d+):(%d+):(%d+)$')
  return tonumber(e), o, tonumber(x), tonumber(u)
end
local function ledger(l, id, add, used)
  local a, u = 0, 0
  local led = redis.call('HGET', l, id)
  if led then
    local x, y = string.match(led, '^(%d+):(%d+)$')
    a, u = tonumber(x), tonumber(y)
  elseif add == 0 then
    return
  end
  redis.call('HSET', l, id, fmt(a + add) .. ':' .. fmt(math.max(u, tonumber(used))))
end
local function keep() for _, k in ipairs(KEYS) do redis.call('EXPIRE', k, 86400) end end
local function alive(m, id)
  local e = redis.call('HGET', m, id)
  return e ~= false and e ~= nil and tonumber(e) >= now_us
end
local function back(s, l, id, used)
  local pv = redis.call('HGET', l, 'p' .. id)
  if pv then
    local a, u = string.match(pv, '^(%d+):(%d+)$')
    local extra = math.min(tonumber(used), tonumber(a)) - tonumber(u)
    if extra > 0 then redis.call('HINCRBY', s, 'missed', fmt(-extra)) end
    redis.call('HDEL', l, 'p' .. id)
  end
end
"
    };
}

/// A script that changes the schedule: `prelude`, then its body as `main`, run at
/// most once per request (see "Which scripts may run twice" above). KEYS[5] is `r`;
/// the last two ARGV are the owner and the request's number.
macro_rules! once {
    ($body:literal) => {
        concat!(
            prelude!(),
            r"
local function enc(t)
  local p = {}
  for i = 1, #t do
    local v = t[i]
    if v == false or v == nil then v = '' elseif type(v) == 'number' then v = fmt(v) end
    p[i] = v
  end
  return table.concat(p, '\31')
end
local function dec(x)
  local t = {}
  for v in string.gmatch(x .. '\31', '([^\31]*)\31') do t[#t + 1] = v end
  return t
end
local owner, seq = ARGV[#ARGV - 1], ARGV[#ARGV]
local prev = redis.call('HGET', KEYS[5], owner)
if prev then
  local ps, body = string.match(prev, '^(%d+)|(.*)$')
  if ps == seq then return dec(body) end
end
local function main()
",
            $body,
            r"
end
local out = main()
redis.call('HSET', KEYS[5], owner, seq .. '|' .. enc(out))
return out
"
        )
    };
}

/// JOIN (at most once). KEYS: s, m, c, l, r. ARGV: gen, c0, c1, rate, slice, strict, frac, paced, member
/// ttl (µs), min members (the start barrier: a schedule created with more than 1 is
/// `open` 0 until BARRIER finds that many live members; a joiner raises `need`).
/// A rate of 0 creates it paused (as a rate of 0 pauses a process alone).
/// Creates the schedule when no live member is in it (a finished or
/// abandoned one is replaced), else joins it if the cycle range matches. Returns
/// `{created|joined, id, gen, origin, now, ver}` or `{mismatch, c0, c1}`.
const JOIN: &str = once!(
    r"
local s, m, c, l = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local live = prune(s, m, l)
local how = 'joined'
if live == 0 or redis.call('EXISTS', s) == 0 then
  redis.call('DEL', s, m, c, l, KEYS[5])
  redis.call('HSET', s, 'gen', ARGV[1], 'origin', fmt(now_us), 'c0', ARGV[2], 'c1', ARGV[3],
    'ccur', ARGV[2], 'ver', 1, 'rate', ARGV[4], 'slice', ARGV[5], 'strict', ARGV[6],
    'frac', ARGV[7], 'paced', ARGV[8], 'paused', (tonumber(ARGV[4]) == 0) and 1 or 0, 'stopped', 0, 'first', 0, 'base', 0,
    'anchor', '', 'counter', 0, 'missed', 0, 'done', 0, 'rerun', 0, 'seen', 0,
    'need', ARGV[10], 'open', (tonumber(ARGV[10]) > 1) and 0 or 1)
  how = 'created'
else
  local r = redis.call('HMGET', s, 'c0', 'c1', 'open', 'need')
  if r[1] ~= ARGV[2] or r[2] ~= ARGV[3] then return {'mismatch', r[1], r[2]} end
  if r[3] == '0' and tonumber(ARGV[10]) > tonumber(r[4]) then redis.call('HSET', s, 'need', ARGV[10]) end
end
local id = redis.call('HINCRBY', s, 'seen', 1)
redis.call('HSET', m, id, fmt(now_us + tonumber(ARGV[9])))
keep()
local r = redis.call('HMGET', s, 'gen', 'origin', 'ver')
return {how, id, r[1], r[2], fmt(since(r[2])), r[3]}
"
);

/// SPEC. KEYS: s. ARGV: gen. The spec in force: `{ok, ver, paced, paused, stopped,
/// rate, slice, strict, frac, now, marked}` (`marked`: 0 for a ramp's step, which
/// the other processes do not mark as an event) or `{gone}`.
const SPEC: &str = concat!(
    prelude!(),
    r"
local r = redis.call('HMGET', KEYS[1], 'gen', 'ver', 'paced', 'paused', 'stopped', 'rate',
  'slice', 'strict', 'frac', 'origin', 'marked')
if r[1] ~= ARGV[1] then return {'gone'} end
return {'ok', r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], fmt(since(r[10])), r[11] or '1'}
"
);

/// LEASE (at most once). KEYS: s, m, c, l, r. ARGV: gen, n, cap, member id, tickets the member has
/// used so far (granted, or forfeited by itself). Applies strictness to the counter at the
/// server's time (strict and compensating forfeit the late tickets; burst allowance
/// moves the epoch's anchor so the late ones are released at `strict x rate`), then
/// takes `n` tickets, or, when more than `n` are already due and nothing spaces
/// them (average and compensating modes), all the due ones up to `cap`: a backlog
/// is caught up at the workers' pace, not one lease's round trip at a time. The
/// member's ledger (`l`: tickets leased and used) gets the lease: if the member dies,
/// what it leased and did not use is counted missed when its membership expires. Returns `{ok, ver, k0, n, first, base, slice, strict, frac, anchor,
/// forfeited, now}`, or `{stopped|pruned|paused|unpaced, ver}` (`pruned`: the member's
/// membership expired; it comes back through BEAT), or `{gone}`.
const LEASE: &str = once!(
    r"
local s = KEYS[1]
local r = redis.call('HMGET', s, 'gen', 'stopped', 'paced', 'paused', 'ver', 'counter',
  'first', 'base', 'slice', 'strict', 'frac', 'anchor', 'origin', 'open', 'fslot')
if r[1] ~= ARGV[1] then return {'gone'} end
if r[2] == '1' then return {'stopped', r[5]} end
if not alive(KEYS[2], ARGV[4]) then return {'pruned', r[5]} end
if r[3] ~= '1' then return {'unpaced', r[5]} end
-- Held at the start barrier (BARRIER opens it): as paused, until the version moves.
if r[4] == '1' or r[14] == '0' then return {'paused', r[5]} end
local t = since(r[13])
local counter, first, base = tonumber(r[6]), tonumber(r[7]), tonumber(r[8])
local slice, strict, frac = tonumber(r[9]), tonumber(r[10]), tonumber(r[11])
local anchor = r[12]
local forfeit = 0
local n = tonumber(ARGV[2])
if t >= base and strict <= 1 then
  local j = first + math.floor((t - base) / slice)
  if j > counter then forfeit = math.floor((j - counter) * frac) end
  if j - (counter + forfeit) + 1 > n then n = math.min(j - (counter + forfeit) + 1, tonumber(ARGV[3])) end
end
counter = counter + forfeit
-- The schedule's first slot: the first any process could use, its first ticket
-- not forfeited (those forfeited before it, a strict mode's set-up, are missed).
if not r[15] then redis.call('HSET', s, 'fslot', fmt(base + math.floor((counter - first) * slice))) end
if strict > 1 then
  local d = math.floor((counter - first) * slice)
  if base + d < t then
    local cand = t - math.floor((counter - first) * slice / strict)
    if anchor == '' or cand > tonumber(anchor) then anchor = fmt(cand) end
  end
end
redis.call('HSET', s, 'counter', fmt(counter + n), 'anchor', anchor)
ledger(KEYS[4], ARGV[4], n, ARGV[5])
if forfeit > 0 then redis.call('HINCRBY', s, 'missed', forfeit) end
return {'ok', r[5], fmt(counter), fmt(n), r[7], r[8], r[9], r[10], r[11], anchor, fmt(forfeit), fmt(t)}
"
);

/// CHANGE (at most once). KEYS: s, m, c, l, r. ARGV: gen, kind (`spec`, `restart`, `pause`, `stop`), rate,
/// slice, strict, frac, horizon (ns), channel, marked (0 for a ramp's step). Installs a new epoch at the ticket
/// counter: every ticket leased from now on is on it, every one leased before keeps
/// its slot. Its base continues the old epoch (lag kept; at most `horizon` ahead of
/// now), or is now after a pause, when unpaced, or for `restart`. A `spec` already in
/// force in the store changes nothing (the caller compares with the store's spec,
/// not with the one it last heard of). Returns `{ok, ver}`,
/// `{stopped, ver}` or `{gone}`.
const CHANGE: &str = once!(
    r"
local s = KEYS[1]
local r = redis.call('HMGET', s, 'gen', 'stopped', 'paced', 'paused', 'ver', 'counter',
  'first', 'base', 'slice', 'origin', 'rate', 'strict')
if r[1] ~= ARGV[1] then return {'gone'} end
if r[2] == '1' then return {'stopped', r[5]} end
local kind = ARGV[2]
-- The spec in force already, as the store has it (the caller may have heard of
-- an older one): nothing to change.
if kind == 'spec' and r[3] == '1' and r[4] ~= '1' and r[11] == ARGV[3] and r[12] == ARGV[5] then
  return {'ok', r[5]}
end
if kind == 'stop' then
  redis.call('HSET', s, 'stopped', 1)
else
  local t = since(r[10])
  local counter, first, base, slice = tonumber(r[6]), tonumber(r[7]), tonumber(r[8]), tonumber(r[9])
  local nb = t
  if r[3] == '1' and r[4] ~= '1' and kind ~= 'restart' then
    nb = math.min(base + math.floor((counter - first) * slice), t + tonumber(ARGV[7]))
  end
  if kind == 'pause' then
    redis.call('HSET', s, 'paused', 1, 'first', fmt(counter), 'base', fmt(nb))
  else
    redis.call('HSET', s, 'paused', 0, 'paced', 1, 'rate', ARGV[3], 'slice', ARGV[4],
      'strict', ARGV[5], 'frac', ARGV[6], 'first', fmt(counter), 'base', fmt(nb), 'anchor', '')
  end
end
redis.call('HSET', s, 'marked', ARGV[9])
local ver = redis.call('HINCRBY', s, 'ver', 1)
redis.call('PUBLISH', ARGV[8], ver)
return {'ok', ver}
"
);

/// BEAT (at most once). KEYS: s, m, c, l, r. ARGV: gen, id, member ttl (µs), claim lease (µs), done
/// delta, missed delta, leaving (0/1), the end of this process's latest op (schedule
/// ns, 0 if none), tickets used so far, may come back (0/1: the count of tickets used
/// is settled, no worker uses one until the reply), then `nr` then `nr` pairs (claim,
/// upto) to renew (or, when leaving, to release at once), then `nt` then `nt` pairs
/// (from, to) of unused tickets (leaving only; the last leased first), then `np` then
/// `np` triples (claim, from, to): leaving only, the pieces of its claims not run,
/// each released as a claim of its own (finished strides past a gap are not released
/// with it). A heartbeat: renews the member and its claims, adds its counts, deletes
/// finished claims (`upto == end`). A member pruned while alive (its membership
/// expired: a process frozen past its TTL) comes back when it may (else `{pruned}`):
/// the tickets it used since its last call are taken off the missed count the prune
/// added, its ledger starts again at its count, and its claims that nobody took over
/// are its own again. Then two more ARGV before the owner and request number: the
/// starts since its last call (the global start rate's sum, `starts`) and its
/// latest start (schedule ns, 0 if none; the maximum is `lstart`). Returns `{ok,
/// ver, live, seen, done, missed, rerun, now, origin, last, rejoined, nl, lost...,
/// given, fslot, starts, lstart}` (`last`: the latest op end any process reported;
/// `rejoined`: 1 when it came back; `lost`: the claim keys given that are not the
/// caller's, taken over or finished by another; `given`: of the unused tickets
/// handed back, how many went back to the schedule, the rest counted missed;
/// `fslot`: the schedule's first slot, empty before its first lease), `{pruned}`
/// or `{gone}`.
const BEAT: &str = once!(
    r"
local s, m, c, l = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local r = redis.call('HMGET', s, 'gen', 'origin')
if r[1] ~= ARGV[1] then return {'gone'} end
local id, leaving = ARGV[2], ARGV[7] == '1'
local rejoined = 0
if not alive(m, id) then
  -- Pruned while alive (frozen past its TTL): the prune counted its unused
  -- tickets missed as of its last call. It comes back only with a count that no
  -- worker of it changes meanwhile (`back` ARGV[10] = 1): the tickets it used
  -- since are taken off that count, and its ledger starts again from here.
  prune(s, m, l)
  if ARGV[10] ~= '1' then return {'pruned'} end
  back(s, l, id, ARGV[9])
  rejoined = 1
  if not leaving then redis.call('HSET', l, id, ARGV[9] .. ':' .. ARGV[9]) end
end
if leaving then
  -- Its unused tickets are given back or counted below, by range.
  redis.call('HDEL', m, id)
  redis.call('HDEL', l, id)
else
  redis.call('HSET', m, id, fmt(now_us + tonumber(ARGV[3])))
  ledger(l, id, 0, ARGV[9])
end
local live = prune(s, m, l)
if tonumber(ARGV[5]) > 0 then redis.call('HINCRBY', s, 'done', ARGV[5]) end
if tonumber(ARGV[6]) > 0 then redis.call('HINCRBY', s, 'missed', ARGV[6]) end
local last = tonumber(redis.call('HGET', s, 'last') or '0')
if tonumber(ARGV[8]) > last then
  last = tonumber(ARGV[8])
  redis.call('HSET', s, 'last', fmt(last))
end
local i = 11
local lost = {}
local released = {}
local nr = tonumber(ARGV[i]); i = i + 1
for _ = 1, nr do
  local key, upto = ARGV[i], tonumber(ARGV[i + 1]); i = i + 2
  local v = redis.call('HGET', c, key)
  local mine = false
  if v then
    local e, o = claim_of(v)
    mine = o == id
    if o == id then
      if upto >= e or leaving then
        -- Leaving: its unrun pieces are released below.
        redis.call('HDEL', c, key)
        released[key] = e
      else
        local x = now_us + tonumber(ARGV[4])
        redis.call('HSET', c, key, fmt(e) .. ':' .. id .. ':' .. fmt(x) .. ':' .. fmt(upto))
      end
    end
  end
  -- Taken over (its claim expired while the member was frozen) or finished by
  -- another: no longer the caller's to run.
  if not mine then lost[#lost + 1] = key end
end
local nt = tonumber(ARGV[i]); i = i + 1
local after = i + 2 * nt
-- A member that came back pruned had its unused tickets counted by the prune.
if rejoined == 1 then nt = 0 end
local given = 0
for _ = 1, nt do
  local from, to = tonumber(ARGV[i]), tonumber(ARGV[i + 1]); i = i + 2
  local q = redis.call('HMGET', s, 'counter', 'first')
  if tonumber(q[1]) == to and from >= tonumber(q[2]) then
    redis.call('HSET', s, 'counter', fmt(from))
    given = given + (to - from)
  else
    redis.call('HINCRBY', s, 'missed', fmt(to - from))
  end
end
i = after
local np = tonumber(ARGV[i]); i = i + 1
for _ = 1, np do
  local key, from, to = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]); i = i + 3
  -- Released: owner 0 (no member has it), expiry 0, for the next claim.
  local e = released[key]
  if leaving and e and from < to and to <= e then
    redis.call('HSET', c, fmt(from), fmt(to) .. ':0:0:' .. fmt(from))
  end
end
-- The starts: a sum of every member's deltas, and the latest start.
local sd, ls = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
if sd > 0 then redis.call('HINCRBY', s, 'starts', fmt(sd)) end
local lstart = tonumber(redis.call('HGET', s, 'lstart') or '0')
if ls > lstart then
  lstart = ls
  redis.call('HSET', s, 'lstart', fmt(ls))
end
keep()
local q = redis.call('HMGET', s, 'ver', 'seen', 'done', 'missed', 'rerun', 'fslot', 'starts')
local out = {'ok', q[1], fmt(live), q[2], q[3], q[4], q[5], fmt(since(r[2])), r[2], fmt(last), rejoined, #lost}
for _, k in ipairs(lost) do out[#out + 1] = k end
out[#out + 1] = fmt(given)
out[#out + 1] = q[6] or ''
out[#out + 1] = q[7] or '0'
out[#out + 1] = fmt(lstart)
return out
"
);

/// CLAIM (at most once). KEYS: s, m, c, l, r. ARGV: gen, id, chunk, claim lease
/// (µs), `nh` then the `nh` claim keys the caller holds. Takes back a claim of the
/// caller's own that it does not hold (none should exist: a chunk whose claim's
/// reply never reached it), then another member's expired claim (its cycles from
/// `upto` are run again and counted in `rerun`), else claims the next chunk.
/// A claim released by a member that left cleanly (owner 0) is taken as it is, not
/// counted re-run: its cycles from `upto` never ran. Returns
/// `{new|own|released|rerun, key, from, to}`, `{wait, µs}` while other members hold
/// live claims and no cycle is left, `{dry}` (the caller's own claims are its to
/// finish), `{stopped}`, `{pruned}` (the caller's membership expired: it comes back
/// through BEAT) or `{gone}`.
const CLAIM: &str = once!(
    r"
local s, c = KEYS[1], KEYS[3]
local r = redis.call('HMGET', s, 'gen', 'stopped', 'ccur', 'c1')
if r[1] ~= ARGV[1] then return {'gone'} end
if r[2] == '1' then return {'stopped'} end
if not alive(KEYS[2], ARGV[2]) then return {'pruned'} end
local id, lease = ARGV[2], tonumber(ARGV[4])
local held = {}
for j = 1, tonumber(ARGV[5]) do held[ARGV[5 + j]] = true end
local all = redis.call('HGETALL', c)
local soonest = nil
for i = 1, #all, 2 do
  local e, o, x, u = claim_of(all[i + 1])
  if u >= e then
    redis.call('HDEL', c, all[i])
  elseif o == '0' then
    -- Released by a member that left cleanly: the rest was never run, so it is
    -- not a re-run.
    redis.call('HSET', c, all[i], fmt(e) .. ':' .. id .. ':' .. fmt(now_us + lease) .. ':' .. fmt(u))
    return {'released', all[i], fmt(u), fmt(e)}
  elseif o == id and not held[all[i]] then
    -- The caller's own and unknown to it: it never ran past the watermark.
    redis.call('HSET', c, all[i], fmt(e) .. ':' .. id .. ':' .. fmt(now_us + lease) .. ':' .. fmt(u))
    return {'own', all[i], fmt(u), fmt(e)}
  elseif o == id then
    -- The caller's own claim: its cycles are handed out where it runs, and its
    -- last watermark may simply not be written yet.
  elseif x < now_us then
    redis.call('HSET', c, all[i], fmt(e) .. ':' .. id .. ':' .. fmt(now_us + lease) .. ':' .. fmt(u))
    redis.call('HINCRBY', s, 'rerun', fmt(e - u))
    return {'rerun', all[i], fmt(u), fmt(e)}
  elseif soonest == nil or x < soonest then
    soonest = x
  end
end
local cur, c1 = tonumber(r[3]), tonumber(r[4])
if cur < c1 then
  local ne = math.min(cur + tonumber(ARGV[3]), c1)
  redis.call('HSET', s, 'ccur', fmt(ne))
  redis.call('HSET', c, fmt(cur), fmt(ne) .. ':' .. id .. ':' .. fmt(now_us + lease) .. ':' .. fmt(cur))
  return {'new', fmt(cur), fmt(cur), fmt(ne)}
end
if soonest then return {'wait', fmt(soonest - now_us)} end
return {'dry'}
"
);

/// BARRIER (at most once; opening twice is the same as once). KEYS: s, m, c, l, r.
/// ARGV: gen, need (this process's `min_members`), lead (ns), channel. The start
/// barrier: while the schedule is not `open`, counts its live members; when they
/// are at least `need` (the largest any joiner asked for), opens it, with the
/// epoch's first slot `lead` from now (every waiting process hears of it first,
/// by the nudge or its next look), and publishes the new version. Returns
/// `{open|wait, live, need, ver}` or `{gone}`.
const BARRIER: &str = once!(
    r"
local s, m, l = KEYS[1], KEYS[2], KEYS[4]
local r = redis.call('HMGET', s, 'gen', 'open', 'need', 'origin', 'counter', 'ver')
if r[1] ~= ARGV[1] then return {'gone'} end
local need = math.max(tonumber(r[3] or '1'), tonumber(ARGV[2]))
local live = prune(s, m, l)
if r[2] ~= '0' then return {'open', fmt(live), fmt(need), r[6]} end
redis.call('HSET', s, 'need', fmt(need))
if live < need then return {'wait', fmt(live), fmt(need), r[6]} end
local t = since(r[4]) + tonumber(ARGV[3])
redis.call('HSET', s, 'open', 1, 'first', r[5], 'base', fmt(t), 'anchor', '')
local ver = redis.call('HINCRBY', s, 'ver', 1)
redis.call('PUBLISH', ARGV[4], ver)
keep()
return {'open', fmt(live), fmt(need), ver}
"
);

/// The scripts, loaded once per process (EVALSHA, reloaded on NOSCRIPT by `Script`).
pub(super) struct Scripts {
    pub(super) join: Script,
    pub(super) spec: Script,
    pub(super) lease: Script,
    pub(super) change: Script,
    pub(super) beat: Script,
    pub(super) claim: Script,
    pub(super) barrier: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        Self {
            join: Script::new(JOIN),
            spec: Script::new(SPEC),
            lease: Script::new(LEASE),
            change: Script::new(CHANGE),
            beat: Script::new(BEAT),
            claim: Script::new(CLAIM),
            barrier: Script::new(BARRIER),
        }
    }
}
