//! Drivers: what turns an activity's ops into work, behind one small trait, and
//! the registry that names them.
//!
//! A [`Driver`] receives an [`OpPlan`] (the activity's ops, op sequence, bindings
//! and effective params) and returns a [`Workload`] for the engine. Three ship
//! with paceline: `diag`, a synthetic op that is the engine's own test instrument;
//! `stdout`, which renders each op as text, JSON or CSV (the dry run of any
//! workload); and `http`, requests over keep-alive connections. An embedding tool
//! registers its own with [`Drivers::register`].
//!
//! ```
//! use paceline::{Activity, Drivers, Engine, ManualClock, ParamOverrides};
//! let drivers = Drivers::builtin();
//! let activity = drivers.loader().from_str(
//!     "params: {driver: diag, cycles: 100}\nops: {noop: 'nothing'}", "a.yaml")?;
//! let engine = Engine::with_clock(ManualClock::new());
//! let run = drivers.start(&engine, &activity, &ParamOverrides::default())?;
//! assert_eq!(run.wait(), paceline::Outcome::Completed);
//! assert_eq!(run.snapshot().ops(), 100);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod db_params;
mod diag;
mod http;
mod plan;
/// The http driver's TLS set-up, shared with the database drivers (`ca_file`,
/// `tls_verify`).
use http::tls as http_tls;
#[cfg(not(loom))]
mod postgres;
#[cfg(all(feature = "redis", not(loom)))]
mod redis;
mod stdout;
#[cfg(all(test, not(loom)))]
mod testing;

pub use db_params::mask_secrets;
pub use diag::Diag;
pub use http::{Http, HttpStats};
pub use plan::OpPlan;
#[cfg(not(loom))]
pub use postgres::{PgStats, Postgres};
#[cfg(all(feature = "redis", not(loom)))]
pub use redis::Redis;
pub use stdout::Stdout;

use super::error::ActivityError;
use super::load::Loader;
use super::model::{Activity, ParamOverrides};
use crate::engine::{ActivityConfig, Control, Engine, EngineError, Workload};
use crate::sync::threads::Arc;
use std::collections::BTreeMap;
use std::fmt;

/// Makes a [`Workload`] from an activity's ops.
///
/// ```
/// use paceline::{Driver, DriverError, OpError, OpPlan, OpRunner, Workload, WorkerContext};
/// use std::sync::Arc;
///
/// /// Counts the characters of each op's `stmt`.
/// struct Count;
/// struct CountWork(Arc<OpPlan>);
/// struct CountRunner(Arc<OpPlan>, u64);
/// impl Driver for Count {
///     fn name(&self) -> &str { "count" }
///     fn workload(&self, plan: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError> {
///         Ok(Box::new(CountWork(plan)))
///     }
/// }
/// impl Workload for CountWork {
///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
///         Ok(Box::new(CountRunner(self.0.clone(), 0)))
///     }
/// }
/// impl OpRunner for CountRunner {
///     fn run(&mut self, cycle: u64) -> Result<(), OpError> {
///         self.1 += self.0.render_field(cycle, "stmt").map_or(0, |s| s.len() as u64);
///         Ok(())
///     }
/// }
/// let mut drivers = paceline::Drivers::builtin();
/// drivers.register(Count);
/// assert!(drivers.names().any(|n| n == "count"));
/// ```
pub trait Driver: Send + Sync + 'static {
    /// The name activity files use in `driver:`.
    fn name(&self) -> &str;

    /// The params this driver accepts besides the core ones; `None` accepts any
    /// key except near misses of the core params. By default, `None`.
    fn params(&self) -> Option<&[&str]> {
        None
    }

    /// The workload for `plan`, or an error that names the bad param or field and
    /// says how to fix it. Called once per activity run, before any thread starts.
    fn workload(&self, plan: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError>;

    /// Checks what only the system under test can tell (a database reached,
    /// its statements prepared), once, right before a run starts and after
    /// [`workload`](Self::workload) accepted it; `paceline check` and the
    /// validation of a scenario's later steps (whose tables an earlier step
    /// may create) do not call it. An error names the op or param (as
    /// `workload`'s do) and says how to fix it. By default, nothing.
    ///
    /// ```
    /// # use paceline::{Driver, DriverError, OpPlan, Workload};
    /// # use std::sync::Arc;
    /// struct Down;
    /// impl Driver for Down {
    ///     fn name(&self) -> &str { "down" }
    ///     fn workload(&self, _: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError> {
    ///         unreachable!()
    ///     }
    ///     fn ready(&self, _: Arc<OpPlan>) -> Result<(), DriverError> {
    ///         Err(DriverError::new("down", "param `url`: nothing answers; start the server"))
    ///     }
    /// }
    /// # let a = paceline::Activity::from_str("params: {driver: down}\nops: {o: x}", "a", &["down"])?;
    /// assert!(Down.ready(Arc::new(OpPlan::new(&a, &Default::default()))).is_err());
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    fn ready(&self, plan: Arc<OpPlan>) -> Result<(), DriverError> {
        let _ = plan;
        Ok(())
    }

    /// The error kinds this driver's ops can fail with under `plan` (`#` stands
    /// for a digit: `http ###`); an `errors=` rule for a kind not among them (nor
    /// the engine's own, [`ENGINE_ERROR_KINDS`](crate::ENGINE_ERROR_KINDS)) is
    /// refused at load, since it would never apply. By default `None`: any kind.
    ///
    /// ```
    /// # use paceline::{Driver, DriverError, OpPlan, Workload};
    /// # use std::sync::Arc;
    /// struct Counter;
    /// impl Driver for Counter {
    ///     fn name(&self) -> &str { "counter" }
    ///     fn workload(&self, _: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError> {
    ///         unreachable!()
    ///     }
    ///     fn error_kinds(&self, _: &OpPlan) -> Option<Vec<String>> {
    ///         Some(vec!["overflow".into()])
    ///     }
    /// }
    /// # let a = paceline::Activity::from_str("params: {driver: counter}\nops: {o: x}", "a", &["counter"])?;
    /// assert_eq!(Counter.error_kinds(&OpPlan::new(&a, &Default::default())), Some(vec!["overflow".into()]));
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    fn error_kinds(&self, plan: &OpPlan) -> Option<Vec<String>> {
        let _ = plan;
        None
    }
}

/// Why a driver refused an activity: a bad param or op field.
///
/// ```
/// let e = paceline::DriverError::new("diag", "param `latency`: `fast` is not a duration; write 5ms or 200us");
/// assert_eq!(e.to_string(), "driver `diag`: param `latency`: `fast` is not a duration; write 5ms or 200us");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverError {
    driver: String,
    message: String,
}

impl DriverError {
    /// An error of `driver` saying `message` (what was wrong, and how to fix it).
    ///
    /// ```
    /// assert_eq!(paceline::DriverError::new("d", "m").message(), "m");
    /// ```
    pub fn new(driver: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            driver: driver.into(),
            message: message.into(),
        }
    }

    /// The driver's name.
    ///
    /// ```
    /// assert_eq!(paceline::DriverError::new("d", "m").driver(), "d");
    /// ```
    pub fn driver(&self) -> &str {
        &self.driver
    }

    /// What was wrong.
    ///
    /// ```
    /// assert_eq!(paceline::DriverError::new("d", "m").message(), "m");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The param the message is about (the drivers write `param `NAME`: ...`).
    pub(crate) fn param(&self) -> Option<&str> {
        let i = self.message.find("param `")? + "param `".len();
        let len = self.message[i..].find('`')?;
        Some(&self.message[i..i + len])
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "driver `{}`: {}", self.driver, self.message)
    }
}

impl std::error::Error for DriverError {}

/// Why an activity could not start.
///
/// ```
/// use paceline::{Drivers, Engine, ParamOverrides, StartError};
/// let drivers = Drivers::builtin();
/// let a = paceline::Activity::from_str("params: {driver: elsewhere}\nops: {o: x}", "a", &["elsewhere"])?;
/// let err = drivers.start(&Engine::new(), &a, &ParamOverrides::default()).unwrap_err();
/// assert!(matches!(err, StartError::UnknownDriver { .. }));
/// # Ok::<(), paceline::ActivityError>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// No driver of that name is registered: register it, or fix the name.
    UnknownDriver {
        /// The name asked for.
        name: String,
        /// The registered names.
        known: Vec<String>,
    },
    /// No op is left to run: the tag filter selects none (or only ops of ratio
    /// 0). Fix the filter; `paceline check` lists the ops and their tags.
    NoOps {
        /// The filter, if any.
        tags: Option<String>,
    },
    /// The driver refused the activity.
    Driver(DriverError),
    /// The engine refused the settings.
    Engine(EngineError),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownDriver { name, known } if name.is_empty() => write!(
                f,
                "no driver: neither the file's `params` nor the step names one; give \
                 `driver=NAME` (known drivers: {})",
                super::suggest::list(known.iter().map(String::as_str))
            ),
            Self::NoOps { tags: Some(t) } => write!(
                f,
                "the tag filter `{t}` selects no op with a ratio above 0; `paceline check` \
                 lists the ops and their tags"
            ),
            Self::NoOps { tags: None } => f.write_str("no op has a ratio above 0"),
            Self::UnknownDriver { name, known } => write!(
                f,
                "unknown driver `{name}`; known drivers: {}",
                super::suggest::list(known.iter().map(String::as_str))
            ),
            Self::Driver(e) => e.fmt(f),
            Self::Engine(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::UnknownDriver { .. } | Self::NoOps { .. } => None,
            Self::Driver(e) => Some(e),
            Self::Engine(e) => Some(e),
        }
    }
}

impl From<DriverError> for StartError {
    fn from(e: DriverError) -> Self {
        Self::Driver(e)
    }
}

impl From<EngineError> for StartError {
    fn from(e: EngineError) -> Self {
        Self::Engine(e)
    }
}

/// The registered drivers, by name.
///
/// ```
/// let drivers = paceline::Drivers::builtin();
/// assert!(drivers.names().any(|n| n == "diag"));
/// ```
#[derive(Clone, Default)]
pub struct Drivers {
    by_name: BTreeMap<String, Arc<dyn Driver>>,
}

impl fmt::Debug for Drivers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.by_name.keys()).finish()
    }
}

impl Drivers {
    /// No drivers.
    ///
    /// ```
    /// assert_eq!(paceline::Drivers::empty().names().count(), 0);
    /// ```
    pub fn empty() -> Self {
        Self::default()
    }

    /// The drivers that ship with paceline.
    ///
    /// ```
    /// let drivers = paceline::Drivers::builtin();
    /// assert_eq!(drivers.names().collect::<Vec<_>>(), ["diag", "http", "jdbc", "postgres", "redis", "stdout"]);
    /// ```
    pub fn builtin() -> Self {
        let mut d = Self::empty();
        d.register(Diag);
        d.register(Stdout);
        d.register(Http);
        #[cfg(not(loom))]
        d.register(Postgres);
        #[cfg(not(loom))]
        d.register(postgres::Jdbc);
        #[cfg(all(feature = "redis", not(loom)))]
        d.register(Redis);
        d
    }

    /// Adds `driver`, replacing one of the same name.
    ///
    /// See [`Driver`] for an example.
    pub fn register(&mut self, driver: impl Driver) -> &mut Self {
        self.by_name
            .insert(driver.name().to_string(), Arc::new(driver));
        self
    }

    /// The driver called `name`.
    ///
    /// ```
    /// assert!(paceline::Drivers::builtin().get("diag").is_some());
    /// ```
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Driver>> {
        self.by_name.get(name)
    }

    /// The names, sorted.
    ///
    /// See [`Drivers`] for an example.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.by_name.keys().map(String::as_str)
    }

    /// A [`Loader`] that knows these drivers and the params each declares.
    ///
    /// ```
    /// let loader = paceline::Drivers::builtin().loader();
    /// let err = loader.from_str("params: {driver: diag, latncy: 1ms}\nops: {o: x}", "a.yaml").unwrap_err();
    /// assert!(err.to_string().contains("did you mean `latency`?"), "{err}");
    /// ```
    pub fn loader(&self) -> Loader {
        let names: Vec<&str> = self.names().collect();
        let mut loader = Loader::new(&names);
        for (name, d) in &self.by_name {
            if let Some(params) = d.params() {
                loader = loader.driver_params(name, params);
            }
        }
        loader
    }

    /// Loads and validates the activity file at `path` against these drivers.
    ///
    /// ```
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/activities/quickstart.yaml");
    /// assert!(paceline::Drivers::builtin().load(path).is_ok());
    /// ```
    pub fn load(&self, path: impl AsRef<std::path::Path>) -> Result<Activity, ActivityError> {
        self.loader().load(path)
    }

    /// The workload for `activity` with `overrides`, and its engine settings,
    /// without starting anything (what `paceline check` validates).
    ///
    /// ```
    /// let d = paceline::Drivers::builtin();
    /// let a = d.loader().from_str("params: {driver: diag, threads: 3}\nops: {o: x}", "a")?;
    /// let (config, _work) = d.prepare(&a, &Default::default())?;
    /// assert_eq!(config.threads_count(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prepare(
        &self,
        activity: &Activity,
        overrides: &ParamOverrides,
    ) -> Result<(ActivityConfig, Box<dyn Workload>), StartError> {
        let plan = Arc::new(OpPlan::new(activity, overrides));
        if plan.sequence().is_empty() {
            return Err(StartError::NoOps {
                tags: plan.params().tags.as_ref().map(ToString::to_string),
            });
        }
        let name = &plan.params().driver;
        let driver = self.get(name).ok_or_else(|| StartError::UnknownDriver {
            name: name.clone(),
            known: self.names().map(str::to_string).collect(),
        })?;
        let config = plan.engine_config();
        config.validate()?;
        let p = plan.params();
        if let Some(kinds) = driver.error_kinds(&plan) {
            let known = crate::engine::KnownKinds::new(name, kinds);
            // A driver error naming `param \`errors\``: the loader points it at
            // the param's place (`file:line:column` or the command line's pair).
            p.errors
                .check_kinds(&known)
                .map_err(|e| DriverError::new(name.as_str(), e.to_string()))?;
        }
        if (p.min_members.is_some() || p.min_members_timeout.is_some())
            && config.coordination().is_none()
        {
            return Err(StartError::Engine(EngineError::BadConfig {
                alias: p.alias.clone(),
                what: "min_members".into(),
                why: "`min_members` and `min_members_timeout` are the start barrier of a shared \
                      schedule: give `coordinate=redis://HOST:PORT/NAME` too, or leave them out"
                    .into(),
            }));
        }
        let work = driver.workload(plan)?;
        Ok((config, work))
    }

    /// Starts `activity` with `overrides` on `engine`.
    ///
    /// See the [`Drivers`] type for the registry and the crate docs for a full run.
    pub fn start(
        &self,
        engine: &Engine,
        activity: &Activity,
        overrides: &ParamOverrides,
    ) -> Result<Control, StartError> {
        let (config, work) = self.prepare(activity, overrides)?;
        let plan = Arc::new(OpPlan::new(activity, overrides));
        if let Some(driver) = self.get(&plan.params().driver) {
            driver.ready(plan).map_err(|e| {
                // Pointed at the op or param it is about, as a load error is;
                // not at the file's param when `overrides` (a scenario step's
                // command, the command line) set it: the caller places it
                // (audit p17 M4).
                let overridden = e.param().is_some_and(|p| overrides.names().contains(&p));
                match activity.position_of(&e).filter(|_| !overridden) {
                    Some((line, column)) => DriverError::new(
                        e.driver(),
                        format!("{}:{line}:{column}: {}", activity.source(), e.message()),
                    ),
                    None => e,
                }
            })?;
        }
        Ok(engine.start(config, work)?)
    }
}
