//! An activity's params and the overrides a scenario step or a command line
//! lays over them, locks included.

use super::params::{Cycles, SeqType, TagFilter};
use crate::engine::ErrorPolicy;
use crate::pace::{Arrivals, RateSpec};
use std::collections::BTreeMap;

/// An activity's parameters, validated, with defaults filled in.
///
/// ```
/// let a = paceline::Activity::from_str("params: {driver: diag}\nops: {o: 'x'}", "a.yaml", &["diag"])?;
/// let p = a.params();
/// assert_eq!((p.alias.as_str(), p.driver.as_str(), p.threads), ("a", "diag", 1));
/// assert_eq!(p.cycles.len(), 1);
/// assert_eq!(p.stride, 1); // the sequence length
/// # Ok::<(), paceline::ActivityError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// The activity's name in metrics and control. By default, the file name
    /// without its extension.
    pub alias: String,
    /// The driver that runs the ops (required).
    pub driver: String,
    /// Worker threads. By default, 1.
    pub threads: usize,
    /// The most ops in flight, spread over the threads (the async runner,
    /// `docs/engine.md`); `None`: one op per thread. By default, `None`.
    pub concurrency: Option<usize>,
    /// The cycles to run. By default, `0..1`, or unbounded
    /// ([`UNBOUNDED_CYCLES`](crate::UNBOUNDED_CYCLES)) when a `duration` is given
    /// and `cycles` is not.
    pub cycles: Cycles,
    /// Whether `cycles` was given (in the file, a step or the command line).
    pub cycles_given: bool,
    /// How long the activity runs before it ends by itself (whichever comes first
    /// of this and the end of its cycles); `None`: until its cycles end. By
    /// default, `None`.
    pub duration: Option<std::time::Duration>,
    /// The rate; `None` runs unpaced. By default, `None`.
    pub rate: Option<RateSpec>,
    /// How the paced slots are spaced (`arrivals: uniform | poisson`); the seed of
    /// Poisson arrivals is [`seed`](Self::seed). By default, uniform.
    pub arrivals: Arrivals,
    /// The seed of Poisson arrivals (`seed: N`): the same seed, the same slots. By
    /// default, 0.
    pub seed: u64,
    /// Cycles a worker takes at a time. By default, the op sequence's length.
    pub stride: u64,
    /// How ops are interleaved. By default, [`SeqType::Bucket`].
    pub seq: SeqType,
    /// What an error does. By default, `stop`.
    pub errors: ErrorPolicy,
    /// Which ops run, by their tags (`tags=block:rampup`); `None` runs them all.
    /// By default, `None`.
    pub tags: Option<TagFilter>,
    /// The shared schedule the activity joins (`coordinate: redis://HOST:PORT/NAME`,
    /// `docs/scale-out.md`); `None` paces it alone. By default, `None`.
    #[cfg(feature = "redis")]
    pub coordinate: Option<crate::store::Coordinate>,
    /// The start barrier of the shared schedule: no slot is granted until this
    /// many processes have joined (`min_members: N`, `docs/scale-out.md`); `None`:
    /// none. Needs `coordinate`. By default, `None`.
    pub min_members: Option<u64>,
    /// How long the start barrier waits for `min_members` processes before the
    /// run fails; `None`: 120 s. By default, `None`.
    pub min_members_timeout: Option<std::time::Duration>,
    /// Every other key, for the driver, as JSON values.
    pub driver_params: BTreeMap<String, serde_json::Value>,
}

impl Params {
    /// These params with `o`'s values in place of the ones it sets.
    ///
    /// ```
    /// let a = paceline::Activity::from_str(
    ///     "params: {driver: diag, threads: 2}\nops: {o: 'x'}\nscenarios: {s: [{run: {threads: 8}}]}",
    ///     "a.yaml", &["diag"])?;
    /// let paceline::Step::Run(o) = &a.scenarios()[0].steps[0] else { panic!() };
    /// assert_eq!(a.params().with(o).threads, 8);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn with(&self, o: &ParamOverrides) -> Params {
        let mut p = self.clone();
        if let Some(v) = &o.alias {
            p.alias = v.clone();
        }
        if let Some(v) = &o.driver {
            p.driver = v.clone();
        }
        if let Some(v) = o.threads {
            p.threads = v;
        }
        if let Some(v) = o.concurrency {
            p.concurrency = Some(v);
        }
        if let Some(v) = o.cycles {
            p.cycles = v;
            p.cycles_given = true;
        }
        if let Some(v) = o.duration {
            p.duration = Some(v);
        }
        if let Some(v) = o.rate {
            p.rate = Some(v);
        }
        if let Some(v) = o.arrivals {
            p.arrivals = v;
        }
        if let Some(v) = o.seed {
            p.seed = v;
        }
        if let Some(v) = o.stride {
            p.stride = v;
        }
        if let Some(v) = o.seq {
            p.seq = v;
        }
        if let Some(v) = o.errors.clone() {
            p.errors = v;
        }
        if let Some(v) = &o.tags {
            p.tags = Some(v.clone());
        }
        #[cfg(feature = "redis")]
        if let Some(v) = &o.coordinate {
            p.coordinate = Some(v.clone());
        }
        if let Some(v) = o.min_members {
            p.min_members = Some(v);
        }
        if let Some(v) = o.min_members_timeout {
            p.min_members_timeout = Some(v);
        }
        for (k, v) in &o.driver_params {
            p.driver_params.insert(k.clone(), v.clone());
        }
        p
    }
}

/// Parameter overrides given by a scenario's `run` or `start` step: each field
/// that is set replaces the activity's own.
///
/// ```
/// let o = paceline::ParamOverrides::default();
/// assert!(o.threads.is_none() && o.driver_params.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParamOverrides {
    /// Replaces `alias`.
    pub alias: Option<String>,
    /// Replaces `driver`.
    pub driver: Option<String>,
    /// Replaces `threads`.
    pub threads: Option<usize>,
    /// Replaces `concurrency`.
    pub concurrency: Option<usize>,
    /// Replaces `cycles`.
    pub cycles: Option<Cycles>,
    /// Replaces `duration`.
    pub duration: Option<std::time::Duration>,
    /// Replaces `rate`.
    pub rate: Option<RateSpec>,
    /// Replaces `arrivals`.
    pub arrivals: Option<Arrivals>,
    /// Replaces `seed`.
    pub seed: Option<u64>,
    /// Replaces `stride`.
    pub stride: Option<u64>,
    /// Replaces `seq`.
    pub seq: Option<SeqType>,
    /// Replaces `errors`.
    pub errors: Option<ErrorPolicy>,
    /// Replaces `tags`.
    pub tags: Option<TagFilter>,
    /// Replaces `coordinate`.
    #[cfg(feature = "redis")]
    pub coordinate: Option<crate::store::Coordinate>,
    /// Replaces `min_members`.
    pub min_members: Option<u64>,
    /// Replaces `min_members_timeout`.
    pub min_members_timeout: Option<std::time::Duration>,
    /// Driver params set or replaced.
    pub driver_params: BTreeMap<String, serde_json::Value>,
    /// Params that later overrides cannot replace (a scenario step's `==` and
    /// `===`), by name; `true` for `===`, whose overriding is reported (see
    /// [`ParamOverrides::overridden_locks`]).
    pub locked: BTreeMap<String, bool>,
}

impl ParamOverrides {
    /// These overrides with `later`'s over them: each field `later` sets wins;
    /// driver params are merged, `later`'s winning.
    ///
    /// ```
    /// use paceline::ParamOverrides;
    /// let step = ParamOverrides { threads: Some(2), stride: Some(10), ..Default::default() };
    /// let cli = ParamOverrides { threads: Some(8), ..Default::default() };
    /// let o = step.then(&cli);
    /// assert_eq!((o.threads, o.stride), (Some(8), Some(10)));
    /// ```
    pub fn then(&self, later: &ParamOverrides) -> ParamOverrides {
        // A struct literal, so a field added later cannot be left out.
        let pick = |a: &Option<String>, b: &Option<String>| b.clone().or_else(|| a.clone());
        let mut out = ParamOverrides {
            alias: pick(&self.alias, &later.alias),
            driver: pick(&self.driver, &later.driver),
            threads: later.threads.or(self.threads),
            concurrency: later.concurrency.or(self.concurrency),
            cycles: later.cycles.or(self.cycles),
            duration: later.duration.or(self.duration),
            rate: later.rate.or(self.rate),
            arrivals: later.arrivals.or(self.arrivals),
            seed: later.seed.or(self.seed),
            stride: later.stride.or(self.stride),
            seq: later.seq.or(self.seq),
            errors: later.errors.clone().or_else(|| self.errors.clone()),
            tags: later.tags.clone().or_else(|| self.tags.clone()),
            #[cfg(feature = "redis")]
            coordinate: later.coordinate.clone().or_else(|| self.coordinate.clone()),
            min_members: later.min_members.or(self.min_members),
            min_members_timeout: later.min_members_timeout.or(self.min_members_timeout),
            driver_params: self
                .driver_params
                .iter()
                .chain(&later.driver_params)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            locked: self
                .locked
                .iter()
                .chain(&later.locked)
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
        };
        // A locked param keeps this side's value, whatever `later` says.
        for key in self.locked.keys() {
            out.restore(key, self);
        }
        out
    }

    /// Sets param `key` back to `from`'s value (set or not).
    fn restore(&mut self, key: &str, from: &ParamOverrides) {
        match key {
            "alias" => self.alias = from.alias.clone(),
            "driver" => self.driver = from.driver.clone(),
            "threads" => self.threads = from.threads,
            "concurrency" => self.concurrency = from.concurrency,
            "cycles" => self.cycles = from.cycles,
            "duration" => self.duration = from.duration,
            "rate" => self.rate = from.rate,
            "arrivals" => self.arrivals = from.arrivals,
            "seed" => self.seed = from.seed,
            "stride" => self.stride = from.stride,
            "seq" => self.seq = from.seq,
            "errors" => self.errors = from.errors.clone(),
            "tags" => self.tags = from.tags.clone(),
            #[cfg(feature = "redis")]
            "coordinate" => self.coordinate = from.coordinate.clone(),
            "min_members" => self.min_members = from.min_members,
            "min_members_timeout" => self.min_members_timeout = from.min_members_timeout,
            other => match from.driver_params.get(other) {
                Some(v) => {
                    self.driver_params.insert(other.to_string(), v.clone());
                }
                None => {
                    self.driver_params.remove(other);
                }
            },
        }
    }

    /// The names of the params these overrides set.
    ///
    /// ```
    /// let o = paceline::ParamOverrides { threads: Some(2), ..Default::default() };
    /// assert_eq!(o.names(), ["threads"]);
    /// ```
    pub fn names(&self) -> Vec<&str> {
        let set = [
            ("alias", self.alias.is_some()),
            ("driver", self.driver.is_some()),
            ("threads", self.threads.is_some()),
            ("concurrency", self.concurrency.is_some()),
            ("cycles", self.cycles.is_some()),
            ("duration", self.duration.is_some()),
            ("rate", self.rate.is_some()),
            ("arrivals", self.arrivals.is_some()),
            ("seed", self.seed.is_some()),
            ("stride", self.stride.is_some()),
            ("seq", self.seq.is_some()),
            ("errors", self.errors.is_some()),
            ("tags", self.tags.is_some()),
            ("coordinate", self.sets_coordinate()),
            ("min_members", self.min_members.is_some()),
            ("min_members_timeout", self.min_members_timeout.is_some()),
        ];
        set.iter()
            .filter(|(_, on)| *on)
            .map(|(k, _)| *k)
            .chain(self.driver_params.keys().map(String::as_str))
            .collect()
    }

    /// Whether these overrides set `coordinate`.
    #[cfg(feature = "redis")]
    fn sets_coordinate(&self) -> bool {
        self.coordinate.is_some()
    }

    /// Without the `redis` feature there is no `coordinate` to set.
    #[cfg(not(feature = "redis"))]
    fn sets_coordinate(&self) -> bool {
        false
    }

    /// The params locked with `===` here that `later` tries to set: what
    /// `paceline run` reports before it keeps the locked values.
    ///
    /// ```
    /// use paceline::ParamOverrides;
    /// let mut step = ParamOverrides { threads: Some(2), ..Default::default() };
    /// step.locked.insert("threads".into(), true);
    /// let cli = ParamOverrides { threads: Some(8), ..Default::default() };
    /// assert_eq!(step.overridden_locks(&cli), ["threads"]);
    /// assert_eq!(step.then(&cli).threads, Some(2));
    /// ```
    pub fn overridden_locks<'a>(&self, later: &'a ParamOverrides) -> Vec<&'a str> {
        later
            .names()
            .into_iter()
            .filter(|k| self.locked.get(*k) == Some(&true))
            .collect()
    }
}
