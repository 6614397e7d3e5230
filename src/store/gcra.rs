//! GCRA (the generic cell rate algorithm) as a pure function, and the Lua script that
//! applies the same function atomically on the server.
//!
//! A key stores its theoretical arrival time `TAT`: when the permits taken so far would
//! have been paid off at the rate `permits / window`. Each permit costs `T = window /
//! permits`; a request for `n` passes when `max(TAT, now) + n × T − now ≤ burst × T`,
//! and then `TAT` becomes that. A refused request could pass once `now` has moved on by
//! the excess.
//!
//! `T` is rarely a whole number of microseconds, so `TAT` is kept exactly as a whole
//! part (µs since the epoch) and a fraction in `permits`-ths of a microsecond:
//! `TAT = base + frac / permits`. Multiplied through by `permits`, every comparison is in
//! integers below 2^53 (with `permits × window` and `burst × window` at most 2^51), so
//! Lua's doubles compute it exactly.
//!
//! **Bound**: in any interval of length `t`, at most `burst + t × permits / window`
//! permits pass: no edge of a window lets twice the limit through.

/// One key's stored state.
#[cfg(all(test, not(loom)))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tat {
    /// The whole microseconds of the theoretical arrival time.
    pub(crate) base: u64,
    /// Its fraction, in `permits`-ths of a microsecond (`< permits`).
    pub(crate) frac: u64,
}

/// What [`decide`] answers: admitted with the new state, or refused with the
/// microseconds until the same request passes (`None`: never, `n > burst`).
#[cfg(all(test, not(loom)))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Admitted(Tat),
    Refused(Option<u64>),
}

/// The decision for `n ≥ 1` permits at `now_us` for `permits` per `window_us` with
/// `burst`, given the stored state. The script below is this function in Lua; this twin
/// is compiled for tests, where proptests check its bound and its retries.
#[cfg(all(test, not(loom)))]
pub(crate) fn decide(
    stored: Option<Tat>,
    now_us: u64,
    window_us: u64,
    permits: u64,
    burst: u64,
    n: u64,
) -> Outcome {
    if n > burst {
        return Outcome::Refused(None);
    }
    let (base, frac) = match stored {
        Some(t) if t.base > now_us || (t.base == now_us && t.frac > 0) => (t.base, t.frac),
        _ => (now_us, 0),
    };
    let add = frac + n * window_us;
    let (nb, nf) = (base + add / permits, add % permits);
    let ahead = (nb - now_us) * permits + nf;
    if ahead <= burst * window_us {
        return Outcome::Admitted(Tat { base: nb, frac: nf });
    }
    Outcome::Refused(Some((ahead - burst * window_us).div_ceil(permits)))
}

/// `decide` on the server: `KEYS[1]` the key's hash, `ARGV` = window (µs), permits,
/// burst, n. Replies `{admitted (0|1), retry_us (−1: never), now_us, permits
/// outstanding (TAT − now in permits, rounded up)}`. The expiry is the new `TAT`: after
/// it a fresh state answers the same.
pub(crate) const SCRIPT: &str = concat!(
    lua_prelude!(),
    r"
local w = tonumber(ARGV[1])
local p = tonumber(ARGV[2])
local b = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local s = redis.call('HMGET', KEYS[1], 'gw', 'gp', 'gt', 'gf')
local base, frac = now, 0
if s[1] and s[2] and s[3] and s[4] and tonumber(s[1]) == w and tonumber(s[2]) == p then
  local tb, tf = tonumber(s[3]), tonumber(s[4])
  if tb > now or (tb == now and tf > 0) then base, frac = tb, tf end
end
if n > b then return {0, -1, now, div((base - now) * p + frac + w - 1, w)} end
local add = frac + n * w
local q = div(add, p)
local nb, nf = base + q, add - q * p
local ahead = (nb - now) * p + nf
if ahead <= b * w then
  redis.call('HSET', KEYS[1], 'gw', ARGV[1], 'gp', ARGV[2],
    'gt', string.format('%d', nb), 'gf', string.format('%d', nf))
  redis.call('PEXPIRE', KEYS[1], div(div(ahead + p - 1, p) + 999, 1000) + 1)
  return {1, 0, now, div(ahead + w - 1, w)}
end
return {0, div(ahead - b * w + p - 1, p), now, div((base - now) * p + frac + w - 1, w)}
"
);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_full_burst_passes_and_the_next_waits_one_emission_interval() {
        // 3 per second: T = 333 333.33 µs, kept exact
        let (w, p) = (1_000_000, 3);
        let mut s = None;
        for _ in 0..3 {
            match decide(s, 5_000_000, w, p, 3, 1) {
                Outcome::Admitted(t) => s = Some(t),
                o => panic!("{o:?}"),
            }
        }
        assert_eq!(
            s,
            Some(Tat {
                base: 6_000_000,
                frac: 0
            })
        );
        // the fourth: one T beyond the burst, rounded up to a microsecond; then TAT
        // moves on by exactly T = 333 333 + 1/3 µs
        assert_eq!(
            decide(s, 5_000_000, w, p, 3, 1),
            Outcome::Refused(Some(333_334))
        );
        assert!(matches!(
            decide(s, 5_333_334, w, p, 3, 1),
            Outcome::Admitted(Tat {
                base: 6_333_333,
                frac: 1
            })
        ));
        assert_eq!(decide(None, 0, w, p, 3, 4), Outcome::Refused(None));
    }

    proptest! {
        /// In every interval between two requests, what passed is at most
        /// `burst + length × permits / window`; every refusal's retry is exact.
        #[test]
        fn the_bound_holds_and_retries_are_exact(
            reqs in prop::collection::vec((0u64..300_000, 1u64..4), 1..150),
            permits in 1u64..20,
            burst in 1u64..8,
            window in 1u64..3_000_000,
            start in 0u64..10_000_000_000,
        ) {
            let mut state = None;
            let mut now = start;
            let mut passed: Vec<(u64, u64)> = Vec::new();
            for (gap, n) in reqs {
                now += gap;
                match decide(state, now, window, permits, burst, n) {
                    Outcome::Admitted(t) => {
                        prop_assert!(t.frac < permits);
                        passed.push((now, n));
                        state = Some(t);
                    }
                    Outcome::Refused(None) => prop_assert!(n > burst),
                    Outcome::Refused(Some(r)) => {
                        prop_assert!(r > 0);
                        let at = decide(state, now + r, window, permits, burst, n);
                        prop_assert!(matches!(at, Outcome::Admitted(_)), "at retry: {:?}", at);
                        let before = decide(state, now + r - 1, window, permits, burst, n);
                        prop_assert!(matches!(before, Outcome::Refused(_)), "before: {:?}", before);
                    }
                }
            }
            for i in 0..passed.len() {
                let mut sum = 0;
                for j in i..passed.len() {
                    sum += passed[j].1;
                    let len = passed[j].0 - passed[i].0;
                    // sum ≤ burst + len × permits / window, in integers
                    prop_assert!(
                        sum * window <= burst * window + len * permits,
                        "{} in {} µs", sum, len
                    );
                }
            }
        }
    }
}
