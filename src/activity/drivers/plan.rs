//! [`OpPlan`]: what a driver gets, one run's ops, op sequence, bindings and
//! effective params, and the engine settings and op table made from them.

use crate::activity::bindings::BindingSet;
use crate::activity::model::{Activity, Op, ParamOverrides, Params};
use crate::engine::ActivityConfig;

/// What a driver gets: one run's ops, op sequence, bindings and effective params.
///
/// ```
/// use paceline::{Activity, OpPlan, ParamOverrides};
/// let a = Activity::from_str(
///     "params: {driver: d, greeting: hi}\nbindings: {n: Mod(3)}\nops: {a: {ratio: 2, stmt: 'A{n}'}, b: 'B{n}'}",
///     "p.yaml", &["d"])?;
/// let plan = OpPlan::new(&a, &ParamOverrides::default());
/// assert_eq!(plan.op_for_cycle(1).name, "b");
/// assert_eq!(plan.render_field(3, "stmt").as_deref(), Some("A0"));
/// assert_eq!(plan.param_str("greeting"), Some("hi"));
/// # Ok::<(), paceline::ActivityError>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpPlan {
    activity: Activity,
    params: Params,
    sequence: Vec<usize>,
}

impl OpPlan {
    /// The plan for `activity` with `overrides` applied.
    ///
    /// See [`OpPlan`] for an example.
    pub fn new(activity: &Activity, overrides: &ParamOverrides) -> Self {
        let mut params = activity.params().with(overrides);
        let sequence = if params.seq == activity.params().seq && params.tags.is_none() {
            activity.sequence().to_vec()
        } else {
            activity.sequence_of(params.seq, params.tags.as_ref())
        };
        // The stride follows this run's sequence unless one was written.
        if !activity.stride_given() && overrides.stride.is_none() {
            params.stride = sequence.len().max(1) as u64;
        }
        if params.cycles.is_undef() {
            // NB5's UNDEF: each op of the sequence once.
            params.cycles =
                crate::activity::params::Cycles::new(0, sequence.len() as u64).unwrap_or_default();
        }
        Self {
            activity: activity.clone(),
            params,
            sequence,
        }
    }

    /// The activity.
    ///
    /// ```
    /// # let a = paceline::Activity::from_str("params: {driver: d}\nops: {o: x}", "p", &["d"])?;
    /// let plan = paceline::OpPlan::new(&a, &Default::default());
    /// assert_eq!(plan.activity().source(), "p");
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn activity(&self) -> &Activity {
        &self.activity
    }

    /// The effective params (the file's, with overrides applied).
    ///
    /// ```
    /// # let a = paceline::Activity::from_str("params: {driver: d}\nops: {o: x}", "p", &["d"])?;
    /// let o = paceline::ParamOverrides { threads: Some(3), ..Default::default() };
    /// assert_eq!(paceline::OpPlan::new(&a, &o).params().threads, 3);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// A driver param's value, if set.
    ///
    /// ```
    /// # let a = paceline::Activity::from_str("params: {driver: d, n: 4}\nops: {o: x}", "p", &["d"])?;
    /// let plan = paceline::OpPlan::new(&a, &Default::default());
    /// assert_eq!(plan.param("n"), Some(&serde_json::json!(4)));
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn param(&self, name: &str) -> Option<&serde_json::Value> {
        self.params.driver_params.get(name)
    }

    /// A driver param's value if it is a string.
    ///
    /// See [`OpPlan`] for an example.
    pub fn param_str(&self, name: &str) -> Option<&str> {
        self.param(name).and_then(|v| v.as_str())
    }

    /// The compiled bindings.
    ///
    /// ```
    /// # let a = paceline::Activity::from_str("params: {driver: d}\nbindings: {k: Hash()}\nops: {o: x}", "p", &["d"])?;
    /// assert_eq!(paceline::OpPlan::new(&a, &Default::default()).bindings().len(), 1);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn bindings(&self) -> &BindingSet {
        self.activity.bindings()
    }

    /// The ops, in the order written.
    ///
    /// ```
    /// # let a = paceline::Activity::from_str("params: {driver: d}\nops: {o: x}", "p", &["d"])?;
    /// assert_eq!(paceline::OpPlan::new(&a, &Default::default()).ops()[0].name, "o");
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn ops(&self) -> &[Op] {
        self.activity.ops()
    }

    /// The op sequence under the effective `seq`.
    ///
    /// ```
    /// # let a = paceline::Activity::from_str("params: {driver: d}\nops: {a: {ratio: 2, stmt: x}, b: y}", "p", &["d"])?;
    /// assert_eq!(paceline::OpPlan::new(&a, &Default::default()).sequence(), [0, 1, 0]);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn sequence(&self) -> &[usize] {
        &self.sequence
    }

    /// The index (into [`ops`](Self::ops)) of the op cycle `cycle` runs.
    ///
    /// ```
    /// # let a = paceline::Activity::from_str("params: {driver: d}\nops: {a: x, b: y}", "p", &["d"])?;
    /// assert_eq!(paceline::OpPlan::new(&a, &Default::default()).op_index(3), 1);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    #[inline]
    pub fn op_index(&self, cycle: u64) -> usize {
        self.sequence[(cycle % self.sequence.len() as u64) as usize]
    }

    /// The op cycle `cycle` runs.
    ///
    /// See [`OpPlan`] for an example.
    #[inline]
    pub fn op_for_cycle(&self, cycle: u64) -> &Op {
        &self.activity.ops()[self.op_index(cycle)]
    }

    /// The op's field `name` for `cycle`, rendered as text (a JSON rendering for
    /// fields that are not text), or `None` if the op has no such field.
    ///
    /// See [`OpPlan`] for an example.
    pub fn render_field(&self, cycle: u64, name: &str) -> Option<String> {
        let mut out = String::new();
        self.op_for_cycle(cycle)
            .field(name)?
            .render_text_into(cycle, self.bindings(), &mut out);
        Some(out)
    }

    /// The engine's op table for this plan: the names of the ops in this run's
    /// sequence (in the order written; ops left out by `tags` or ratio 0 are
    /// not named) and the sequence over them, so the engine records each op's
    /// figures under its name. `None` for an empty sequence, or more ops than
    /// [`MAX_OPS`](crate::MAX_OPS).
    ///
    /// ```
    /// # let a = paceline::Activity::from_str("params: {driver: d}\nops: {a: {ratio: 2, stmt: x}, b: {ratio: 0, stmt: y}, c: z}", "p", &["d"])?;
    /// let t = paceline::OpPlan::new(&a, &Default::default()).op_table().unwrap();
    /// assert_eq!(t.names().iter().map(|n| n.as_ref()).collect::<Vec<_>>(), ["a", "c"]);
    /// assert_eq!(t.names()[t.op_of(1)].as_ref(), "c"); // the sequence is a, c, a
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn op_table(&self) -> Option<crate::engine::OpTable> {
        let ops = self.ops();
        // Op index -> its place among the ops that run.
        let mut place = vec![usize::MAX; ops.len()];
        let mut names = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            if self.sequence.contains(&i) {
                place[i] = names.len();
                names.push(op.name.as_str());
            }
        }
        let sequence: Vec<usize> = self.sequence.iter().map(|&i| place[i]).collect();
        crate::engine::OpTable::new(names, &sequence).ok()
    }

    /// The engine settings for this plan's params.
    ///
    /// ```
    /// # let a = paceline::Activity::from_str("params: {driver: d, threads: 2, cycles: 10}\nops: {o: x}", "p", &["d"])?;
    /// let c = paceline::OpPlan::new(&a, &Default::default()).engine_config();
    /// assert_eq!((c.threads_count(), c.cycle_range(), c.driver_name()), (2, 0..10, "d"));
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn engine_config(&self) -> ActivityConfig {
        let p = &self.params;
        // A duration without cycles runs until its time is up.
        let cycles = if p.duration.is_some() && !p.cycles_given {
            0..crate::activity::UNBOUNDED_CYCLES
        } else {
            p.cycles.start()..p.cycles.end()
        };
        let config = ActivityConfig::new(p.alias.clone())
            .driver(p.driver.clone())
            .threads(p.threads)
            .maybe_concurrency(p.concurrency)
            .cycles(cycles)
            .maybe_duration(p.duration)
            .stride(p.stride)
            .maybe_rate(p.rate)
            .arrivals(match p.arrivals {
                crate::pace::Arrivals::Uniform => crate::pace::Arrivals::Uniform,
                crate::pace::Arrivals::Poisson { .. } => {
                    if p.rate.is_none() {
                        note_poisson_waits_for_a_rate(&p.alias, p.seed);
                    }
                    crate::pace::Arrivals::Poisson { seed: p.seed }
                }
            })
            .errors(p.errors.clone());
        // No table (an empty sequence, refused before a run starts; more ops
        // than `MAX_OPS`): figures for all ops only.
        let config = match self.op_table() {
            Some(t) => config.ops(t),
            None => config,
        };
        #[cfg(feature = "redis")]
        if let Some(c) = &p.coordinate {
            let c = c.clone().min_members(
                p.min_members.unwrap_or(1),
                p.min_members_timeout
                    .unwrap_or(crate::store::DEFAULT_MIN_MEMBERS_TIMEOUT),
            );
            return config.coordinate(c);
        }
        config
    }
}

/// Prints, once per activity alias in this process (a run builds its config more
/// than once), that `arrivals: poisson` without a `rate` runs unpaced until a
/// rate is set (audit of issue 22, L7): no error, since a later rate change
/// paces it at the seed's random slots.
fn note_poisson_waits_for_a_rate(alias: &str, seed: u64) {
    use crate::sync::threads::{Mutex, lock};
    static NOTED: std::sync::OnceLock<Mutex<std::collections::BTreeSet<String>>> =
        std::sync::OnceLock::new();
    if lock(NOTED.get_or_init(Default::default)).insert(alias.to_string()) {
        eprintln!(
            "note: activity `{alias}`: `arrivals: poisson` without a `rate` runs unpaced; \
             a rate set later (PUT /activities/{alias}/rate) paces it at Poisson slots (seed {seed})"
        );
    }
}
