//! The approximate sliding window as a pure function, and the Lua script that applies
//! the same function atomically on the server.
//!
//! Time is the server's `TIME` in microseconds since the Unix epoch. A key's window of
//! width `w` is cut at multiples of `w`; the key stores the count of the current
//! window (`cur`) and of the one before (`prev`). At `e` microseconds into the current
//! window, the estimate of what the sliding window of width `w` ending now holds is
//!
//! ```text
//! estimate = prev × (w − e) / w + cur
//!
//!   prev window          current window
//! |--------------------|---------e----------|
//!          <--------- sliding window w ----->
//!          (w − e)/w of prev counts   all of cur
//! ```
//!
//! A request for `n` passes when `estimate + n ≤ limit`, decided exactly in integers:
//! `prev × (w − e) + (cur + n) × w ≤ limit × w`. Every number in that comparison stays
//! below 2^53 (see [`MAX_LIMIT_TIMES_WINDOW`]), so Lua's doubles compute it exactly and
//! the script and `decide` (its Rust twin, compiled for tests) agree bit for bit.
//!
//! **Bound**: `cur ≤ limit` always, so at most `limit` pass in any aligned window and
//! at most `2 × limit` in any window of width `w`; the weighting keeps a steady stream
//! close to `limit` per sliding window (the estimate assumes `prev` was spread evenly).

/// The largest `limit × window_us` accepted: with it, `prev × (w − e) + (cur + n) × w`
/// stays below `3 × 2^51 < 2^53`, exact in a double.
pub(crate) const MAX_LIMIT_TIMES_WINDOW: u64 = 1 << 51;

/// One key's stored state.
#[cfg(all(test, not(loom)))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct State {
    /// The window width the state was counted with, in microseconds.
    pub(crate) window_us: u64,
    /// The number of the window `cur` counts (server time / width).
    pub(crate) index: u64,
    /// Admitted in window `index`.
    pub(crate) current: u64,
    /// Admitted in window `index − 1`.
    pub(crate) previous: u64,
}

/// What [`decide`] answers.
#[cfg(all(test, not(loom)))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Admitted: store `state`, expiring after `ttl_ms`.
    Admitted {
        /// The key's new state.
        state: State,
        /// Milliseconds until the state no longer matters (the end of the window after
        /// the current one), rounded up.
        ttl_ms: u64,
    },
    /// Refused: nothing changes; the same request passes `retry_us` from now if nothing
    /// else is admitted meanwhile, or never (`None`: `n > limit`).
    Refused {
        /// Microseconds until the request could pass.
        retry_us: Option<u64>,
    },
}

/// `floor(a / b)` for `b > 0`.
#[cfg(all(test, not(loom)))]
fn div(a: u64, b: u64) -> u64 {
    a / b
}

/// The decision for `n` permits at server time `now_us` against `limit` per `window_us`,
/// given the key's stored state (if any). `n ≥ 1`, `window_us ≥ 1`, and
/// `limit × window_us ≤` [`MAX_LIMIT_TIMES_WINDOW`].
///
/// The script below is this function in Lua; this twin is compiled for tests only, where
/// proptests check its properties (the server's decisions are replayed against an
/// independent model in `tests/store_redis.rs`).
#[cfg(all(test, not(loom)))]
pub(crate) fn decide(
    stored: Option<State>,
    now_us: u64,
    window_us: u64,
    limit: u64,
    n: u64,
) -> Outcome {
    let w = window_us;
    let index = now_us / w;
    let e = now_us - index * w;
    let (cur, prev) = match stored {
        Some(s) if s.window_us == w && s.index == index => (s.current, s.previous),
        Some(s) if s.window_us == w && s.index + 1 == index => (0, s.current),
        _ => (0, 0),
    };
    if n > limit {
        return Outcome::Refused { retry_us: None };
    }
    if prev * (w - e) + (cur + n) * w <= limit * w {
        return Outcome::Admitted {
            state: State {
                window_us: w,
                index,
                current: cur + n,
                previous: prev,
            },
            ttl_ms: div(2 * w - e + 999, 1000),
        };
    }
    let retry_us = if cur + n <= limit {
        // Only `prev` is in the way: its weight falls as `e` grows; the first `e'` in
        // this window with prev × (w − e') ≤ (limit − cur − n) × w.
        w - div((limit - cur - n) * w, prev) - e
    } else {
        // `cur` alone is too much: wait for the next window, where `cur` becomes the
        // previous count and must weigh at most limit − n.
        (w - e) + w - div((limit - n) * w, cur)
    };
    Outcome::Refused {
        retry_us: Some(retry_us),
    }
}

/// `decide` on the server: `KEYS[1]` the key's hash, `ARGV` = window (µs), limit, n.
/// Replies `{admitted (0|1), retry_us (−1: never), now_us, current count}`.
///
/// Lua numbers are doubles: `div` corrects a quotient rounded up or down by one, and
/// large integers are written with `%d` (a bare number would be written with 14
/// significant digits).
pub(crate) const SCRIPT: &str = concat!(
    lua_prelude!(),
    r"
local w = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local idx = div(now, w)
local e = now - idx * w
local cur, prev = 0, 0
local s = redis.call('HMGET', KEYS[1], 'w', 'i', 'c', 'p')
if s[1] and s[2] and tonumber(s[1]) == w then
  local i = tonumber(s[2])
  if i == idx then
    cur = tonumber(s[3]); prev = tonumber(s[4])
  elseif i + 1 == idx then
    prev = tonumber(s[3])
  end
end
if n > limit then return {0, -1, now, cur} end
if prev * (w - e) + (cur + n) * w <= limit * w then
  cur = cur + n
  redis.call('HSET', KEYS[1], 'w', ARGV[1], 'i', string.format('%d', idx),
    'c', string.format('%d', cur), 'p', string.format('%d', prev))
  redis.call('PEXPIRE', KEYS[1], div(2 * w - e + 999, 1000))
  return {1, 0, now, cur}
end
local retry
if cur + n <= limit then
  retry = w - div((limit - cur - n) * w, prev) - e
else
  retry = (w - e) + w - div((limit - n) * w, cur)
end
return {0, retry, now, cur}
"
);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const W: u64 = 1_000_000;

    fn admitted(o: Outcome) -> State {
        match o {
            Outcome::Admitted { state, .. } => state,
            Outcome::Refused { .. } => panic!("refused: {o:?}"),
        }
    }

    #[test]
    fn the_first_limit_pass_in_a_fresh_window_and_the_next_waits_for_the_weight() {
        let mut s = None;
        let now = 10 * W + 250_000;
        for i in 1..=5 {
            let st = admitted(decide(s, now, W, 5, 1));
            assert_eq!(st.current, i);
            s = Some(st);
        }
        // prev = 0: only the next window frees room; there cur = 5 weighs 5 × (w − e)/w,
        // so 1 fits once (w − e)/w ≤ 4/5: e ≥ 200 ms.
        assert_eq!(
            decide(s, now, W, 5, 1),
            Outcome::Refused {
                retry_us: Some(750_000 + 200_000)
            }
        );
        assert!(matches!(
            decide(s, 11 * W + 199_999, W, 5, 1),
            Outcome::Refused { .. }
        ));
        assert_eq!(admitted(decide(s, 11 * W + 200_000, W, 5, 1)).previous, 5);
    }

    #[test]
    fn more_than_the_limit_never_passes_and_a_stale_or_reshaped_state_is_fresh() {
        assert_eq!(
            decide(None, 7, W, 3, 4),
            Outcome::Refused { retry_us: None }
        );
        let full = State {
            window_us: W,
            index: 3,
            current: 3,
            previous: 3,
        };
        assert!(matches!(
            decide(Some(full), 3 * W, W, 3, 1),
            Outcome::Refused { .. }
        ));
        // two windows later, or counted with another width: nothing counts
        assert_eq!(admitted(decide(Some(full), 5 * W, W, 3, 3)).previous, 0);
        let other = State {
            window_us: W / 2,
            index: 6,
            ..full
        };
        assert_eq!(admitted(decide(Some(other), 3 * W, W, 3, 3)).current, 3);
    }

    #[test]
    fn the_ttl_reaches_the_end_of_the_next_window_rounded_up_to_a_millisecond() {
        let o = decide(None, 4 * W + 1, W, 1, 1);
        assert!(matches!(o, Outcome::Admitted { ttl_ms: 2000, .. }), "{o:?}");
        let o = decide(None, 4 * W + 999_000, W, 1, 1);
        assert!(matches!(o, Outcome::Admitted { ttl_ms: 1001, .. }), "{o:?}");
    }

    /// Requests at increasing times: (gap before it in µs, permits).
    fn requests() -> impl Strategy<Value = Vec<(u64, u64)>> {
        prop::collection::vec((0u64..400_000, 1u64..4), 1..200)
    }

    proptest! {
        /// Every admission keeps the estimate within the limit, so no aligned window
        /// ever admits more than `limit`; every refusal's retry is exact: the same
        /// request passes at `now + retry` and not one microsecond before.
        #[test]
        fn decisions_keep_the_bound_and_retries_are_exact(
            reqs in requests(),
            limit in 1u64..12,
            window in prop_oneof![Just(W), 1u64..3_000_000],
            start in 0u64..10_000_000_000,
        ) {
            let mut state: Option<State> = None;
            let mut now = start;
            let mut per_window = std::collections::HashMap::<u64, u64>::new();
            for (gap, n) in reqs {
                now += gap;
                match decide(state, now, window, limit, n) {
                    Outcome::Admitted { state: s, ttl_ms } => {
                        let e = now % window;
                        prop_assert!(s.previous * (window - e) + s.current * window <= limit * window);
                        prop_assert!(ttl_ms * 1000 >= 2 * window - e);
                        prop_assert!(ttl_ms * 1000 < 2 * window - e + 1000);
                        *per_window.entry(now / window).or_default() += n;
                        state = Some(s);
                    }
                    Outcome::Refused { retry_us: None } => prop_assert!(n > limit),
                    Outcome::Refused { retry_us: Some(r) } => {
                        prop_assert!(r > 0);
                        let at = decide(state, now + r, window, limit, n);
                        prop_assert!(matches!(at, Outcome::Admitted { .. }), "at retry: {:?}", at);
                        let before = decide(state, now + r - 1, window, limit, n);
                        prop_assert!(matches!(before, Outcome::Refused { .. }), "before retry: {:?}", before);
                    }
                }
            }
            for (w, count) in per_window {
                prop_assert!(count <= limit, "window {} admitted {}", w, count);
            }
        }

        /// The Lua `div` fix-up gives the exact quotient for every pair below 2^53.
        #[test]
        fn corrected_double_division_is_exact(a in 0u64..(1 << 53), b in 1u64..(1 << 40)) {
            let mut q = (a as f64 / b as f64).floor() as u64;
            if q * b > a { q -= 1 } else if (q + 1) * b <= a { q += 1 }
            prop_assert_eq!(q, a / b);
        }
    }
}
