//! Activities: the YAML model and its validation (the only code that knows YAML),
//! and bindings.
//!
//! An activity file holds a description, params, bindings, ops and scenarios;
//! `docs/activities.md` is the format's reference and `docs/bindings.md` the
//! bindings'. Loading validates the whole file and reports every problem with
//! `file:line:column`, what was wrong and how to fix it; nothing runs until the
//! whole file validates.
//!
//! ```
//! use paceline::Activity;
//! let err = Activity::from_str(
//!     "params:\n  driver: daig\n  thread: 4\nops:\n  read: 'GET {kye}'\n",
//!     "bad.yaml",
//!     &["diag", "stdout"],
//! )
//! .unwrap_err();
//! let lines: Vec<String> = err.problems().iter().map(|p| p.to_string()).collect();
//! assert_eq!(lines[0], "bad.yaml:2:11: unknown driver `daig`; did you mean `diag`? known drivers: `diag`, `stdout`");
//! assert_eq!(lines[1], "bad.yaml:3:3: unknown param `thread`; did you mean `threads`?");
//! assert!(lines[2].starts_with("bad.yaml:5:14: unknown binding `{kye}`"));
//! ```

mod bindings;
mod blocks;
mod cmdline;
mod drivers;
mod error;
mod focus;
mod load;
mod locate;
mod model;
mod overrides;
mod params;
mod scenario;
mod steps;
mod steps_nb5;
mod suggest;
mod synth;
mod template_vars;
mod thresholds;
mod validate;
mod validate_items;
mod validate_params;
mod yaml_depth;
mod yaml_errors;

pub use bindings::{Binding, BindingError, BindingSet, Kind, Template, TemplateError, Value};
pub use cmdline::COMMAND_LINE;
#[cfg(all(feature = "redis", not(loom)))]
pub use drivers::Redis;
pub use drivers::mask_secrets;
pub use drivers::{
    Diag, Driver, DriverError, Drivers, Http, HttpStats, OpPlan, StartError, Stdout,
};
#[cfg(not(loom))]
pub use drivers::{PgStats, Postgres};
pub use error::{ActivityError, Problem};
pub use load::Loader;
pub use model::{Activity, Field, Op, ParamOverrides, Params, Scenario, Step};
pub use params::{Cycles, ParamError, SeqType, TagFilter};
pub use scenario::{ScenarioError, run_scenario};
pub use suggest::closest as closest_name;
pub use thresholds::{
    Bound, Checked, Distribution, Metric, Observed, Op as ThresholdOp, Stat, Threshold,
    ThresholdError,
};

/// The cycles an activity with a `duration` and no `cycles` runs: `0..2^53`,
/// unbounded in practice (285 years at a million ops a second) and within what a
/// shared schedule can count. Reports show such an activity as unbounded.
///
/// ```
/// let a = paceline::Activity::from_str("params: {driver: diag, duration: 10s}\nops: {o: x}", "a", &["diag"])?;
/// let c = paceline::OpPlan::new(&a, &Default::default()).engine_config();
/// assert_eq!(c.cycle_range(), 0..paceline::UNBOUNDED_CYCLES);
/// assert_eq!(c.duration_limit(), Some(std::time::Duration::from_secs(10)));
/// # Ok::<(), paceline::ActivityError>(())
/// ```
pub const UNBOUNDED_CYCLES: u64 = 1 << 53;

impl Activity {
    /// Reads and validates the activity file at `path`, knowing the drivers
    /// `drivers`. Use a [`Loader`] to declare drivers' params.
    ///
    /// ```
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/activities/kv-stdout.yaml");
    /// let a = paceline::Activity::load(path, &["diag", "stdout", "http"])?;
    /// assert_eq!(a.params().driver, "stdout");
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn load(
        path: impl AsRef<std::path::Path>,
        drivers: &[&str],
    ) -> Result<Self, ActivityError> {
        Loader::new(drivers).load(path)
    }

    /// Validates the activity in `text`, naming it `source` in positions.
    ///
    /// ```
    /// let a = paceline::Activity::from_str("params: {driver: diag}\nops: {o: x}", "a.yaml", &["diag"])?;
    /// assert_eq!(a.ops().len(), 1);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn from_str(text: &str, source: &str, drivers: &[&str]) -> Result<Self, ActivityError> {
        Loader::new(drivers).from_str(text, source)
    }
}
