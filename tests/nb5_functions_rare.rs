//! NB5's binding functions that its shipped workloads use once or twice
//! (issue 26): each test names the NB5 source it follows, and its values are
//! worked by hand from that source's rules.

use paceline::{Binding, Kind, Value};

fn eval(expr: &str, cycle: u64) -> Value {
    Binding::parse("b", expr)
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
        .eval(cycle)
}

fn text(expr: &str, cycle: u64) -> String {
    match eval(expr, cycle) {
        Value::Str(s) => s,
        other => panic!("{expr}: a string, not {other:?}"),
    }
}

fn error(expr: &str) -> String {
    Binding::parse("b", expr)
        .err()
        .unwrap_or_else(|| panic!("{expr} compiled"))
        .to_string()
}

/// `from_long/to_time_types/ToFinestTimeUUID.java`: the input is the 100 ns
/// tick count itself; a base time adds its ticks since 1582-10-15
/// (`DateTimeFormats.parseEpochTimeToTimeUUIDTicks`: (ms + 12219292800000) * 10000).
#[test]
fn to_finest_time_uuid_lays_out_ticks_as_nb5() {
    assert_eq!(
        text("ToFinestTimeUUID()", 0),
        "00000000-0000-1000-8000-000000000000"
    );
    assert_eq!(
        text("ToFinestTimeUUID()", 1),
        "00000001-0000-1000-8000-000000000000"
    );
    // (1517461200000 + 12219292800000) * 10000 = 0x1E8070CC15E8800.
    assert_eq!(
        text("ToFinestTimeUUID('2018-02-01 05:00:00')", 0),
        "c15e8800-070c-11e8-8000-000000000000"
    );
    // Node and clock: lsb = (clock & 0x3fff) << 48 | 0x8000.. | node.
    assert_eq!(
        text("ToFinestTimeUUID(5, 3)", 0),
        "00000000-0000-1000-8003-000000000005"
    );
}

/// adapter-cqld4 `long_uuid/ToTimeUUIDMin.java`, `ToTimeUUIDMax.java`: the
/// Cassandra driver's `Uuids.startOf(ms)` (ticks of ms, lsb 0x8080808080808080)
/// and `Uuids.endOf(ms)` (ticks of ms + 1, less one; lsb 0x7f7f7f7f7f7f7f7f).
#[test]
fn time_uuid_bounds_are_the_driver_s() {
    // At the epoch: 12219292800000 * 10000 = 0x01B21DD213814000.
    assert_eq!(
        text("ToTimeUUIDMin()", 0),
        "13814000-1dd2-11b2-8080-808080808080"
    );
    assert_eq!(
        text("ToTimeUUIDMax()", 0),
        "1381670f-1dd2-11b2-7f7f-7f7f7f7f7f7f"
    );
}

/// `from_long/to_time_types/ToJodaDateTime.java`: `new DateTime(ms, UTC)`,
/// printed by `toString()` (ISO, milliseconds always, `Z` for UTC).
#[test]
fn to_joda_date_time_prints_as_joda() {
    assert_eq!(
        text("ToJodaDateTime()", 1_517_461_200_000),
        "2018-02-01T05:00:00.000Z"
    );
    assert_eq!(
        text("ToJodaDateTime('1000')", 1),
        "1970-01-01T00:00:01.000Z"
    );
    // (input * spacing) / repeat: 7 * 10 / 3 = 23 ms.
    assert_eq!(text("ToJodaDateTime(10, 3)", 7), "1970-01-01T00:00:00.023Z");
    assert!(error("ToJodaDateTime(5)").contains("ToJodaDateTime('5')"));
}

/// adapter-cqld4 `long_localdate/LongToLocalDateDays.java`:
/// `LocalDate.ofEpochDay((int) value & Integer.MAX_VALUE)`, as `toString()`.
#[test]
fn long_to_local_date_days_is_java_s_local_date() {
    assert_eq!(text("LongToLocalDateDays()", 0), "1970-01-01");
    assert_eq!(text("LongToLocalDateDays()", 17_563), "2018-02-01");
    // 2932897 days is 10000-01-01: java.time writes the sign past 9999.
    assert_eq!(text("LongToLocalDateDays()", 2_932_897), "+10000-01-01");
    // (int) 2^32 + 5 is 5.
    assert_eq!(text("LongToLocalDateDays()", (1 << 32) + 5), "1970-01-06");
}

/// `from_long/to_long/WeightedLongs.java` and
/// `from_long/to_string/WeightedStrings.java`: `value:weight` items split at
/// `;` (strings also at `,`), trailing empty items dropped (Java's `split`),
/// drawn in proportion to their weights.
#[test]
fn weighted_longs_and_strings_split_and_draw_as_nb5() {
    let b = Binding::parse("b", "WeightedLongs('2:20;4:70;8:10')").unwrap();
    assert_eq!(b.kind(), Kind::I64);
    let mut counts = [0u32; 3];
    for c in 0..10_000 {
        match b.eval(c) {
            Value::I64(2) => counts[0] += 1,
            Value::I64(4) => counts[1] += 1,
            Value::I64(8) => counts[2] += 1,
            other => panic!("{other:?}"),
        }
    }
    for (n, want) in counts.iter().zip([2_000, 7_000, 1_000]) {
        assert!(n.abs_diff(want) < 300, "{counts:?}");
    }
    // graph_wheels.yaml's `'phone:10;computer:10;'`: two items, not a third empty one.
    let seen: std::collections::BTreeSet<String> = (0..500)
        .map(|c| text("WeightedStrings('phone:10;computer:10;')", c))
        .collect();
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["computer", "phone"]);
    // `,` separates items too.
    let seen: std::collections::BTreeSet<String> = (0..500)
        .map(|c| text("WeightedStrings('a,b')", c))
        .collect();
    assert_eq!(seen.len(), 2);
    assert!(error("WeightedLongs('x:1')").contains("not a long integer"));
}

/// http-rest-keyvalue.yaml's `ToString(); WeightedStrings(...)`: NB5's
/// composer feeds the text to a function of a long as
/// `Double.valueOf(text).longValue()` (virtdata `ComposerForLongFunction`),
/// so the chain draws as the input itself would.
#[test]
fn weighted_strings_after_to_string_reads_the_number_back() {
    for c in [0, 1, 7, 1_000_003] {
        assert_eq!(
            eval("ToString(); WeightedStrings('a:1;b:2;c:3'); ToString()", c),
            eval("WeightedStrings('a:1;b:2;c:3')", c)
        );
    }
    // Text that is not a number's is still refused.
    assert!(error("Prefix('x'); WeightedStrings('a;b')").contains("takes an integer"));
}

/// `diagnostics/TypeOf.java`: the canonical name of the value's Java class;
/// `util/Stringify.java`: `String.valueOf`, arrays as `Arrays.toString`.
#[test]
fn type_of_and_stringify_name_and_print_as_nb5() {
    assert_eq!(
        text("NumberNameToString(); TypeOf()", 3),
        "java.lang.String"
    );
    assert_eq!(text("ToJavaInstant(); TypeOf()", 3), "java.time.Instant");
    assert_eq!(text("TypeOf()", 3), "java.lang.Long");
    assert_eq!(text("Hash() -> int; TypeOf()", 3), "java.lang.Integer");
    assert_eq!(text("HashedFloatVectors(2); TypeOf()", 3), "float[]");
    assert_eq!(text("Mod(7); Stringify()", 10), "3");
    let s = text("HashedDoubleVectors(3, 2.0d, 3.0d); Stringify()", 5);
    assert!(
        s.starts_with('[') && s.ends_with(']') && s.matches(", ").count() == 2,
        "{s}"
    );
}

/// `virtdata-lib-vectors` `primitive/HashedDoubleVectors.java`: SIZE doubles
/// from `HashRange(min, max)` of `hash(input) + i`, as `HashedFloatVectors`
/// gives floats.
#[test]
fn hashed_double_vectors_are_hashed_float_vectors_in_double() {
    let Value::List(d) = eval("HashedDoubleVectors(13)", 9) else {
        panic!("a list")
    };
    let Value::List(f) = eval("HashedFloatVectors(13)", 9) else {
        panic!("a list")
    };
    assert_eq!(d.len(), 13);
    for (d, f) in d.iter().zip(&f) {
        let (Value::F64(d), Value::F32(f)) = (d, f) else {
            panic!("{d:?} {f:?}")
        };
        assert_eq!(*d as f32, *f);
        assert!((0.0..1.0).contains(d));
    }
    let Value::List(sized) = eval("HashedDoubleVectors(Mod(4), Mul(0))", 6) else {
        panic!("a list")
    };
    assert_eq!(sized, vec![Value::F64(0.0); 2]);
}

/// adapter-cqld4 `to_cqlvector/CqlVector.java` has one constructor, of a list
/// function: `CqlVector()` is refused, saying NB5 cannot run it either.
#[test]
fn cql_vector_without_its_list_is_refused_as_nb5_refuses_it() {
    let e = error("CqlVector()");
    assert!(e.contains("so NB5 cannot run this binding either"), "{e}");
}

/// `distributions/CSVFrequencySampler.java`: the distinct values of a column,
/// each drawn in proportion to how often it occurs; `.csv` added to a name
/// without it; a column the header lacks is an error naming it.
#[test]
fn csv_frequency_sampler_draws_by_frequency() {
    let dir = std::env::temp_dir().join(format!("paceline-csvfs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("keys.csv");
    std::fs::write(&file, "id,name\n1,alpha\n2,delta\n3,alpha\n4,alpha\n").unwrap();
    let base = file.with_extension("").display().to_string();
    let expr = format!("CSVFrequencySampler('{base}', 'name')");
    let alphas = (0..4_000).filter(|&c| text(&expr, c) == "alpha").count();
    assert!(
        alphas.abs_diff(3_000) < 200,
        "{alphas} of 4000, 3 in 4 wanted"
    );
    let e = error(&format!("CSVFrequencySampler('{base}', 'nom')"));
    assert!(e.contains("`nom`"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `from_long/to_collection/SetFunctions.java`, `SetStepped.java`,
/// `SetSized.java`: the elements added to a `new HashSet<>(size)`, printed in
/// Java's iteration order. Worked by hand: with 3 elements the table has 4
/// buckets; `Long` 3 hashes to 3, "three" (110339486, spread 0x693A30D) to
/// bucket 1, "3-three" (0xDD3B8784, spread 0xDD3B5ABF) to 3, after the 3 added
/// before it. These functions take no hash, so NB5 prints the same.
#[test]
fn sets_iterate_as_java_s_hash_set() {
    let set = "SetFunctions(Identity(), NumberNameToString(), \
               Template('{}-{}', Identity(), NumberNameToString()))";
    assert_eq!(eval(set, 3).to_string(), "[three, 3, 3-three]");
    // 1 -> bucket 1, "one" (110182) -> 3, "1-one" (46703306, spread 0x2C8A002) -> 2.
    assert_eq!(eval(set, 1).to_string(), "[1, 1-one, one]");
    // Input + i: 1, "two", "three", all in bucket 1: the order added.
    assert_eq!(
        eval(
            "SetStepped(Identity(), NumberNameToString(), NumberNameToString())",
            1
        )
        .to_string(),
        "[1, two, three]"
    );
    // Duplicates are dropped: three elements of one value make a set of one.
    assert_eq!(
        eval("SetSized(3, NumberNameToString())", 7).to_string(),
        "[seven]"
    );
    // A list of sets, as bindings_collections.yaml's `list_of_sets`: a set of
    // 2 starts at 2 buckets (threshold 1), and grows to 4 with its second
    // element: 3 -> bucket 3, "three" -> 1; 4 -> 0, "four" (3149094) -> 2.
    let Value::List(sets) = eval(
        "ListSizedStepped(2, SetSized(2, Identity(), NumberNameToString()))",
        3,
    ) else {
        panic!("a list")
    };
    assert_eq!(sets[0].to_string(), "[three, 3]");
    assert_eq!(sets[1].to_string(), "[4, four]");
}

/// `curves4` `continuous/long_double/Levy.java`: commons-statistics'
/// `LevyDistribution(mu, c)` by its inverse CDF at a hashed unit value. Its
/// median is `mu + c / (2 erfcinv(1/2)^2)` = `mu + c / q^2`, q the normal
/// quantile of 1/4 (-0.6744897501960817): 1.0990 for `Levy(0.0, 0.5)`.
#[test]
fn levy_draws_the_levy_distribution() {
    let b = Binding::parse("b", "Levy(0.0, 0.5)").unwrap();
    assert_eq!(b.kind(), Kind::F64);
    let median = 0.5 / 0.674_489_750_196_081_7f64.powi(2);
    let draws: Vec<f64> = (0..4_000)
        .map(|c| match b.eval(c) {
            Value::F64(x) => x,
            other => panic!("a float, not {other:?}"),
        })
        .collect();
    assert!(draws.iter().all(|x| *x > 0.0));
    let below = draws.iter().filter(|x| **x < median).count();
    assert!(
        below.abs_diff(2_000) < 150,
        "{below} of 4000 below the median"
    );
    // A quarter of the mass lies below mu + c / q(1/8)^2 (q = -1.1503493803760083).
    let q1 = 0.5 / 1.150_349_380_376_008_3f64.powi(2);
    let below = draws.iter().filter(|x| **x < q1).count();
    assert!(
        below.abs_diff(1_000) < 120,
        "{below} of 4000 below the first quartile"
    );
    assert!(error("Levy(0.0, 0.0)").contains("c > 0"));
}

/// `stateful/Show.java`: the thread's saved values as `HashMap.toString()`,
/// or the names asked as `{a=value,b=value}`. bindings_basics.yaml's `Show()`
/// with nothing saved is `{}`; bindings_utilities.yaml's
/// `SaveLong('var42'); Show()` is `{var42=CYCLE}`.
#[test]
fn show_prints_the_saved_values_as_nb5() {
    assert_eq!(text("Show()", 5), "{}");
    assert_eq!(text("SaveLong('var42'); Show()", 5), "{var42=5}");
    // HashMap order, 16 buckets: "q" (113) in bucket 1, "b" (98) in 2.
    assert_eq!(
        text("Mod(10); SaveLong('b'); SaveLong('q'); Show()", 17),
        "{q=7, b=7}"
    );
    assert_eq!(text("SaveLong('a'); Show('a', 'zz')", 3), "{a=3,zz=NULL}");
    let e = error("SaveLong('a'); Mod(2); Show()");
    assert!(
        e.contains("saved before a function changed the value"),
        "{e}"
    );
}

/// `virtdata-lib-vectors` `primitive/DoubleVectors.java` (a `DoubleCombiner`
/// over `UnitSteps`) and `FloatVectors.java`: the input in mixed radix over
/// `Combiner.parseSpec`'s positions (`0-2*2` is two positions of `0-2`), each
/// digit d as `(d % steps) / steps`, steps the largest set's size.
#[test]
fn double_vectors_step_through_the_unit_interval_as_nb5() {
    // 5 = 1 * 3 + 2.
    assert_eq!(
        eval("DoubleVectors('0-2*2')", 5).to_string(),
        "[0.3333333333333333, 0.6666666666666666]"
    );
    // 9 / 3 = 3, past the set: 3 % 3 = 0.
    assert_eq!(eval("DoubleVectors('0-2*2')", 9).to_string(), "[0.0, 0.0]");
    assert_eq!(
        eval("FloatVectors('0-9*4')", 12).to_string(),
        "[0.0, 0.0, 0.1, 0.2]"
    );
    // `;` and `,` separate positions; the largest set (26) sets the steps.
    assert_eq!(
        eval("DoubleVectors('a-z;01')", 3).to_string(),
        "[0.038461538461538464, 0.038461538461538464]"
    );
}

/// `primitive/NormalizeDoubleVector.java`: `x / sqrt(sum x*x)`, so a zero
/// vector is NaNs (0 / 0), as Java; `NormalizeFloatVector.java` sums `float`
/// products; adapter-cqld4's `NormalizeCqlVector.java` multiplies by
/// `1 / sqrt(...)` and rounds each element to a `float`, doubles too.
#[test]
fn normalizers_compute_as_nb5_s() {
    assert_eq!(
        eval("DoubleVectors('0-2*2'); NormalizeDoubleVector()", 0).to_string(),
        "[NaN, NaN]"
    );
    // [1/3, 2/3] / sqrt(5/9) = [1/sqrt(5), 2/sqrt(5)].
    assert_eq!(
        eval("DoubleVectors('0-2*2'); NormalizeDoubleVector()", 5).to_string(),
        "[0.4472135954999579, 0.8944271909999159]"
    );
    // The same through a float: (double) (float) 0.4472135954999579.
    assert_eq!(
        eval("DoubleVectors('0-2*2'); NormalizeCqlVector()", 5).to_string(),
        "[0.4472135901451111, 0.8944271802902222]"
    );
    assert_eq!(
        eval("FloatVectors('0-2*2'); NormalizeFloatVector()", 5).to_string(),
        "[0.4472136, 0.8944272]"
    );
}
