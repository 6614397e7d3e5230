//! What reproduces Java's own collections where NB5's output shows them:
//! `hashCode()` of the objects NB5's functions give ([`java_hash`]) and the
//! order in which a `java.util.HashSet` iterates them ([`java_hash_order`]),
//! for `CSVFrequencySampler`'s numbering and the `Set*` functions' sets.

use crate::activity::bindings::value::Value;

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over the
/// UTF-16 code units, in 32-bit wrapping arithmetic.
pub(crate) fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

/// The order in which a `java.util.HashSet` iterates distinct elements added
/// in the order given, whose `hashCode()`s are `hashes`: by bucket,
/// `(h ^ h >>> 16) & (buckets - 1)`, and within a bucket in the order added
/// (a resize keeps that order). Indices into `hashes`.
///
/// The bucket count is the `HashMap`'s: `new HashSet<>()` (`capacity` None)
/// starts at 16, `new HashSet<>(n)` at the power of two at or above n (1 for
/// 0); it doubles whenever the count passes three quarters of it (Java's
/// threshold, `(int) (buckets * 0.75f)`).
/// Not reproduced: a bucket of more than 8 elements in a table of 64 or more
/// becomes a tree in Java, whose order differs.
pub(crate) fn java_hash_order(hashes: &[i32], capacity: Option<usize>) -> Vec<usize> {
    let mut buckets = capacity.map_or(16, |c| c.max(1).next_power_of_two());
    while hashes.len() > buckets * 3 / 4 {
        buckets *= 2;
    }
    let bucket = |h: i32| ((h ^ ((h as u32) >> 16) as i32) as u32 as usize) & (buckets - 1);
    let mut order: Vec<usize> = (0..hashes.len()).collect();
    // A stable sort: within a bucket, the order added.
    order.sort_by_key(|&i| bucket(hashes[i]));
    order
}

/// The `hashCode()` of the Java object NB5 has for a value: an integer as a
/// `Long` (`(int) (v ^ v >>> 32)`), a float as a `Double` (a single-precision
/// one as a `Float`), a boolean as 1231 or 1237, text as a `String`, a list
/// as a `List` (`31 * h + e` from 1).
pub(crate) fn java_hash(v: &Value) -> i32 {
    let long = |x: u64| (x ^ (x >> 32)) as i32;
    match v {
        Value::U64(x) => long(*x),
        Value::I64(x) => long(*x as u64),
        Value::F64(x) => long(if x.is_nan() {
            0x7ff8_0000_0000_0000
        } else {
            x.to_bits()
        }),
        Value::F32(x) => (if x.is_nan() { 0x7fc0_0000 } else { x.to_bits() }) as i32,
        Value::Bool(b) => {
            if *b {
                1231
            } else {
                1237
            }
        }
        Value::Str(s) => java_string_hash(s),
        Value::List(items) => items
            .iter()
            .fold(1i32, |h, e| h.wrapping_mul(31).wrapping_add(java_hash(e))),
    }
}

/// A `new HashSet<>(capacity)` of `items` added in order, as NB5's `Set*`
/// functions make it: duplicates dropped (the first kept), iterated in
/// Java's order.
pub(crate) fn java_hash_set(items: Vec<Value>, capacity: usize) -> Vec<Value> {
    let mut distinct: Vec<Value> = Vec::with_capacity(items.len());
    for v in items {
        if !distinct.contains(&v) {
            distinct.push(v);
        }
    }
    let hashes: Vec<i32> = distinct.iter().map(java_hash).collect();
    let order = java_hash_order(&hashes, Some(capacity));
    let mut slots: Vec<Option<Value>> = distinct.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Java: `"alpha".hashCode()` is 92909918, `"".hashCode()` 0, `"Aa"` and
    /// `"BB"` collide at 2112; a non-ASCII character counts as its UTF-16 unit.
    #[test]
    fn string_hashes_are_java_s() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("alpha"), 92_909_918);
        assert_eq!(java_string_hash("Aa"), 2112);
        assert_eq!(java_string_hash("BB"), 2112);
        assert_eq!(java_string_hash("é"), 0xe9);
        // Wraps as Java's int: "hello world".hashCode() == 1794106052.
        assert_eq!(java_string_hash("hello world"), 1_794_106_052);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
    }

    /// `new HashSet<>(List.of(...))`-style adds, iterated as Java iterates
    /// them (worked by hand from `HashMap.hash` and the table size).
    #[test]
    fn hash_set_iterates_in_java_s_order() {
        let hash_set_order = |xs: &[&str]| {
            let hashes: Vec<i32> = xs.iter().map(|s| java_string_hash(s)).collect();
            java_hash_order(&hashes, None)
        };
        // "b" 98 -> bucket 2, "a" 97 -> 1, "c" 99 -> 3: Java prints [a, b, c].
        assert_eq!(hash_set_order(&["b", "a", "c"]), vec![1, 0, 2]);
        // "q" 113 & 15 = 1 shares bucket 1 with "a": added after it, after it.
        assert_eq!(hash_set_order(&["q", "b", "a"]), vec![0, 2, 1]);
        // "alpha" 92909918 (0x589B15E): h ^ h >>> 16 = 0x589B4D7, & 15 = 7;
        // "delta" 95468472 (0x5B0BBB8): 0x5B0BE08, & 15 = 8: [alpha, delta].
        assert_eq!(hash_set_order(&["delta", "alpha"]), vec![1, 0]);
        // 13 elements: 32 buckets (12 fit in 16). 16 & 31 = 16 and 1 & 31 = 1.
        let hashes: Vec<i32> = (0..13).map(|i| if i == 0 { 16 } else { i }).collect();
        assert_eq!(java_hash_order(&hashes, None)[..2], [1, 2]);
        assert_eq!(java_hash_order(&hashes, None)[12], 0);
    }

    /// `new HashSet<>(n)` sizes its table from n: `SetSized(3, ...)` of the
    /// Longs 1, 2, 5 has 4 buckets (3 fits in 4 * 0.75), so 5 (bucket 1)
    /// comes before 2 (bucket 2) where the default 16 buckets put it last.
    #[test]
    fn sized_hash_sets_iterate_from_their_own_table() {
        let set = |xs: &[u64], cap| java_hash_set(xs.iter().map(|x| Value::U64(*x)).collect(), cap);
        let u = |xs: &[u64]| xs.iter().map(|x| Value::U64(*x)).collect::<Vec<_>>();
        assert_eq!(set(&[1, 2, 5], 3), u(&[1, 5, 2]));
        assert_eq!(set(&[1, 2, 5], 16), u(&[1, 2, 5]));
        // A duplicate is dropped: 5 distinct in 8 buckets (from 6); 9 and 1
        // share bucket 1, in the order added.
        assert_eq!(set(&[9, 1, 9, 2, 5, 8], 6), u(&[8, 9, 1, 2, 5]));
        // From 1 bucket (threshold 0) two elements grow it to 2, then 4.
        assert_eq!(set(&[4, 1], 1), u(&[4, 1]));
        assert_eq!(set(&[4, 1], 0), u(&[4, 1]));
        // Java: Long.hashCode(-1) == 0, "one".hashCode() == 110182, List.of(1L).hashCode() == 32.
        assert_eq!(java_hash(&Value::I64(-1)), 0);
        assert_eq!(java_hash(&Value::Str("one".into())), 110_182);
        assert_eq!(java_hash(&Value::List(vec![Value::U64(1)])), 32);
        assert_eq!(java_hash(&Value::Bool(true)), 1231);
        assert_eq!(java_hash(&Value::F64(1.0)), 1_072_693_248);
    }
}
