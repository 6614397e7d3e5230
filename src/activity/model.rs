//! The validated model of an activity file.

use super::bindings::{BindingSet, Template};
pub use super::overrides::{ParamOverrides, Params};
use super::params::{SeqType, TagFilter};
use crate::pace::RateSpec;
use std::collections::BTreeMap;
use std::time::Duration;

/// One field of an op: text with placeholders, a literal, or a list or map of fields.
///
/// ```
/// let a = paceline::Activity::from_str(
///     "params: {driver: diag}\nbindings: {n: Mod(10)}\nops:\n  o: {body: {id: '{n}', tags: [a, '#{n}'], fixed: 3}}",
///     "a.yaml", &["diag"])?;
/// let op = &a.ops()[0];
/// assert_eq!(
///     op.render_json(12, a.bindings()),
///     serde_json::json!({"body": {"id": 2, "tags": ["a", "#2"], "fixed": 3}})
/// );
/// # Ok::<(), paceline::ActivityError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    /// A string, with `{binding}` placeholders.
    Text(Template),
    /// A number, boolean or null, the same every cycle.
    Literal(serde_json::Value),
    /// A list of fields.
    List(Vec<Field>),
    /// A map of fields, in the order written.
    Map(Vec<(String, Field)>),
}

impl Field {
    /// Appends the field's value for `cycle` as text: a text field rendered, any
    /// other field as its JSON (a string value without quotes).
    ///
    /// ```
    /// use paceline::{BindingSet, Field, Template};
    /// let set = BindingSet::compile([("n", "Mod(10)")])?;
    /// let mut buf = String::new();
    /// Field::Text(Template::compile("n={n}", &set).unwrap()).render_text_into(4, &set, &mut buf);
    /// Field::List(vec![Field::Literal(serde_json::json!(1))]).render_text_into(4, &set, &mut buf);
    /// assert_eq!(buf, "n=4[1]");
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn render_text_into(&self, cycle: u64, bindings: &BindingSet, buf: &mut String) {
        use std::fmt::Write as _;
        match self {
            Field::Text(t) => t.render_into(cycle, bindings, buf),
            other => match other.render_json(cycle, bindings) {
                serde_json::Value::String(s) => buf.push_str(&s),
                v => {
                    let _ = write!(buf, "{v}");
                }
            },
        }
    }

    /// The field's value for `cycle`, as JSON. A text that is exactly one
    /// placeholder keeps the binding's type.
    ///
    /// ```
    /// use paceline::{BindingSet, Field, Template};
    /// let set = BindingSet::compile([("n", "Mod(10)")])?;
    /// let f = Field::Text(Template::compile("{n}", &set).unwrap());
    /// assert_eq!(f.render_json(4, &set), serde_json::json!(4));
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn render_json(&self, cycle: u64, bindings: &BindingSet) -> serde_json::Value {
        match self {
            Field::Text(t) => t.value(cycle, bindings).into_json(),
            Field::Literal(v) => v.clone(),
            Field::List(items) => items
                .iter()
                .map(|f| f.render_json(cycle, bindings))
                .collect(),
            Field::Map(entries) => serde_json::Value::Object(
                entries
                    .iter()
                    .map(|(k, f)| (k.clone(), f.render_json(cycle, bindings)))
                    .collect(),
            ),
        }
    }
}

/// One op of an activity: its name, ratio and driver fields.
///
/// An op written as a plain string is shorthand for `{stmt: STRING}`.
///
/// ```
/// let a = paceline::Activity::from_str(
///     "params: {driver: stdout}\nbindings: {k: Mod(5)}\nops:\n  get: 'GET {k}'\n  put: {ratio: 3, stmt: 'PUT {k}'}",
///     "kv.yaml", &["stdout"])?;
/// let get = &a.ops()[0];
/// assert_eq!((get.name.as_str(), get.ratio), ("get", 1));
/// let paceline::Field::Text(t) = get.field("stmt").unwrap() else { panic!() };
/// assert_eq!(t.render(7, a.bindings()), "GET 2");
/// # Ok::<(), paceline::ActivityError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// The op's name.
    pub name: String,
    /// Its share of the op sequence (0 leaves it out). By default, 1.
    pub ratio: u64,
    /// Its driver fields, in the order written (`ratio` is not among them).
    pub fields: Vec<(String, Field)>,
    /// Its tags: the file's, its block's and its own, and `block` (the block's
    /// name), `name` and `op` (its name) as NoSQLBench sets them. Tags select ops
    /// (`tags=block:rampup`); they are never fields.
    pub tags: BTreeMap<String, String>,
    /// The fields that came from `params` (its block's or its own), not from
    /// the op: NB5's op params (`cl`, `prepared`, `instrument`, ...). Drivers
    /// read them as fields; the stdout driver does not print them by default.
    pub param_fields: Vec<String>,
}

impl Op {
    /// The field called `name`.
    ///
    /// ```
    /// let a = paceline::Activity::from_str("params: {driver: diag}\nops: {o: 'x'}", "a", &["diag"])?;
    /// assert!(a.ops()[0].field("stmt").is_some());
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, f)| f)
    }

    /// All fields for `cycle` as a JSON object.
    ///
    /// ```
    /// let a = paceline::Activity::from_str("params: {driver: diag}\nops: {o: 'x'}", "a", &["diag"])?;
    /// assert_eq!(a.ops()[0].render_json(0, a.bindings()), serde_json::json!({"stmt": "x"}));
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn render_json(&self, cycle: u64, bindings: &BindingSet) -> serde_json::Value {
        serde_json::Value::Object(
            self.fields
                .iter()
                .map(|(k, f)| (k.clone(), f.render_json(cycle, bindings)))
                .collect(),
        )
    }
}

/// One step of a scenario. Every step that acts on an activity names it by alias,
/// resolved at validation (a step without `alias` acts on the most recently
/// started activity).
///
/// ```
/// let a = paceline::Activity::from_str(
///     "params: {driver: diag}\nops: {o: x}\nscenarios:\n  s: [start, {rate: 100}, {wait: 2s}, stop]",
///     "a.yaml", &["diag"])?;
/// let steps = &a.scenarios()[0].steps;
/// assert!(matches!(&steps[1], paceline::Step::Rate { alias, .. } if alias == "a"));
/// assert_eq!(steps[2], paceline::Step::Wait(std::time::Duration::from_secs(2)));
/// # Ok::<(), paceline::ActivityError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Run the activity with these overrides and wait until it completes.
    Run(ParamOverrides),
    /// Start the activity with these overrides in the background.
    Start(ParamOverrides),
    /// Wait this long.
    Wait(Duration),
    /// Wait until the activity `alias` completes.
    Await {
        /// Which activity.
        alias: String,
    },
    /// Change the rate of `alias` now.
    Rate {
        /// Which activity.
        alias: String,
        /// The new rate.
        spec: RateSpec,
    },
    /// Move the rate of `alias` to `to`, linearly over `over`.
    Ramp {
        /// Which activity.
        alias: String,
        /// The rate at the end of the ramp (its strictness, verb and scope apply
        /// throughout).
        to: RateSpec,
        /// How long the ramp takes.
        over: Duration,
    },
    /// Change the thread count of `alias`.
    Threads {
        /// Which activity.
        alias: String,
        /// The new thread count.
        count: usize,
    },
    /// Change the most ops in flight of `alias` (`concurrency`; it must run on
    /// the async runner).
    Concurrency {
        /// Which activity.
        alias: String,
        /// The new most ops in flight.
        count: usize,
    },
    /// Stop `alias`.
    Stop {
        /// Which activity.
        alias: String,
    },
    /// An NB5 command paceline does not run (`findmax`, `optimo`, `reset`,
    /// `runapp`): the scenario goes on without it; `paceline run` says so.
    Skipped {
        /// The command's word (`findmax`).
        command: String,
        /// The activity it acts on (`activity=NAME`), if it names one.
        alias: Option<String>,
        /// What NB5 would do there, and what to run in paceline instead.
        note: String,
    },
}

/// A named list of steps, run in order.
///
/// ```
/// let a = paceline::Activity::from_str(
///     "params: {driver: diag}\nops: {o: x}\nscenarios: {smoke: [run]}", "a", &["diag"])?;
/// assert_eq!(a.scenario("smoke").unwrap().steps.len(), 1);
/// # Ok::<(), paceline::ActivityError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The scenario's name.
    pub name: String,
    /// Its steps.
    pub steps: Vec<Step>,
    /// Each step's name: the key of an NB5 map of named steps, or the step's
    /// 1-based position as text (`paceline run FILE SCENARIO.STEP` picks one).
    pub step_names: Vec<String>,
}

impl Scenario {
    /// The scenario cut to the step called `name`, or `None` if it has none.
    ///
    /// ```
    /// let a = paceline::Activity::from_str(
    ///     "params: {driver: d}\nops: {o: x}\nscenarios:\n  s:\n    warm: run cycles=5\n    main: run cycles=10\n  t: [run, {wait: 1s}]",
    ///     "a.yaml", &["d"])?;
    /// let main = a.scenario("s").unwrap().step("main").unwrap();
    /// assert_eq!((main.steps.len(), main.step_names[0].as_str()), (1, "main"));
    /// assert!(a.scenario("t").unwrap().step("2").is_some()); // a list's steps by position
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn step(&self, name: &str) -> Option<Scenario> {
        let i = self.step_names.iter().position(|n| n == name)?;
        Some(Scenario {
            name: format!("{}.{name}", self.name),
            steps: vec![self.steps[i].clone()],
            step_names: vec![name.to_string()],
        })
    }
}

/// A validated activity file: description, params, compiled bindings, ops, the op
/// sequence and scenarios. Build one with [`Activity::load`],
/// [`Activity::from_str`] or a [`Loader`](super::Loader).
///
/// ```
/// use paceline::{Activity, Field};
/// let a = Activity::from_str(r#"
/// description: a tiny key-value workload
/// params: {driver: stdout, cycles: 10, seq: concat}
/// bindings:
///   key: Hash(); Mod(1000); ToString(); Prefix('k')
/// ops:
///   read: {ratio: 2, stmt: 'GET {key}'}
///   write: 'SET {key} 1'
/// "#, "kv.yaml", &["stdout"])?;
/// assert_eq!(a.sequence(), [0, 0, 1]);
/// let op = a.op_for_cycle(2);
/// assert_eq!(op.name, "write");
/// assert_eq!(a.description(), Some("a tiny key-value workload"));
/// # Ok::<(), paceline::ActivityError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Activity {
    pub(crate) source: String,
    pub(crate) description: Option<String>,
    pub(crate) params: Params,
    pub(crate) bindings: BindingSet,
    pub(crate) ops: Vec<Op>,
    pub(crate) sequence: Vec<usize>,
    pub(crate) scenarios: Vec<Scenario>,
    /// Whether `stride` was written (else it follows each run's sequence length).
    pub(crate) stride_given: bool,
    /// The template variables the file uses (`<<name:default>>`, `TEMPLATE(name)`).
    pub(crate) template_vars: Vec<String>,
    /// The text validated (template variables expanded), for positions found
    /// after loading: a driver's complaint about an op's field.
    pub(crate) text: String,
    /// Where each op is in `text`, parallel to `ops`.
    pub(crate) op_paths: Vec<Vec<super::locate::Seg>>,
    /// What loading decided without failing: another driver's params not
    /// read, a synthesised op.
    pub(crate) notices: Vec<String>,
    /// The file's `thresholds:`, parsed.
    pub(crate) thresholds: Vec<super::thresholds::Threshold>,
}

impl Activity {
    /// What loading decided without failing, one line each, for a person to
    /// read: params of another driver that the running one does not read (a
    /// dry run of an NB5 file through `driver=stdout`), an op made from the
    /// bindings of a file without ops.
    ///
    /// ```
    /// let loader = paceline::Loader::new(&["stdout"]).run_driver("stdout");
    /// let a = loader.from_str("params: {driver: cql, cl: LOCAL_QUORUM}\nops: {o: x}", "a")?;
    /// assert!(a.notices()[0].contains("`cl`"));
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The file's `thresholds:` list (`docs/cli.md`, "In CI"): pass/fail criteria
    /// checked at the end of a run, each for every activity or, with an
    /// `ALIAS:` prefix, for one.
    ///
    /// ```
    /// let a = paceline::Activity::from_str(
    ///     "params: {driver: d}\nops: {o: x}\nthresholds:\n  - response.p99<50ms\n  - {expr: 'errors<1%', abort_on_fail: true}",
    ///     "a", &["d"])?;
    /// let t = a.thresholds();
    /// assert_eq!((t[0].expr.as_str(), t[1].abort_on_fail), ("response.p99<50ms", true));
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn thresholds(&self) -> &[super::thresholds::Threshold] {
        &self.thresholds
    }

    /// Where the activity came from (the path or the name given).
    ///
    /// ```
    /// let a = paceline::Activity::from_str("params: {driver: d}\nops: {o: x}", "mine", &["d"])?;
    /// assert_eq!(a.source(), "mine");
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The description, if any.
    ///
    /// ```
    /// let a = paceline::Activity::from_str("params: {driver: d}\nops: {o: x}", "a", &["d"])?;
    /// assert_eq!(a.description(), None);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The params, defaults filled in.
    ///
    /// ```
    /// let a = paceline::Activity::from_str("params: {driver: d, threads: 3}\nops: {o: x}", "a", &["d"])?;
    /// assert_eq!(a.params().threads, 3);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The compiled bindings.
    ///
    /// ```
    /// let a = paceline::Activity::from_str("params: {driver: d}\nbindings: {k: Hash()}\nops: {o: x}", "a", &["d"])?;
    /// assert_eq!(a.bindings().len(), 1);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn bindings(&self) -> &BindingSet {
        &self.bindings
    }

    /// The ops, in the order written.
    ///
    /// ```
    /// let a = paceline::Activity::from_str("params: {driver: d}\nops: {a: x, b: y}", "a", &["d"])?;
    /// assert_eq!(a.ops()[1].name, "b");
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The op sequence under the params' `seq`: op indexes, one per position.
    ///
    /// ```
    /// let a = paceline::Activity::from_str(
    ///     "params: {driver: d}\nops: {a: {ratio: 2, stmt: x}, b: y}", "a", &["d"])?;
    /// assert_eq!(a.sequence(), [0, 1, 0]);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn sequence(&self) -> &[usize] {
        &self.sequence
    }

    /// The op sequence under another sequencing (for a `seq` override).
    ///
    /// ```
    /// use paceline::SeqType;
    /// let a = paceline::Activity::from_str(
    ///     "params: {driver: d}\nops: {a: {ratio: 2, stmt: x}, b: y}", "a", &["d"])?;
    /// assert_eq!(a.sequence_for(SeqType::Concat), [0, 0, 1]);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn sequence_for(&self, seq: SeqType) -> Vec<usize> {
        self.sequence_of(seq, None)
    }

    /// The op sequence under `seq` of the ops `tags` selects (all when `None`):
    /// the others count as ratio 0.
    ///
    /// ```
    /// use paceline::{SeqType, TagFilter};
    /// let a = paceline::Activity::from_str(
    ///     "params: {driver: d}\nblocks:\n  w: {ops: {a: x}}\n  r: {ops: {b: {ratio: 2, stmt: y}}}", "a", &["d"])?;
    /// let f = TagFilter::parse("block:r")?;
    /// assert_eq!(a.sequence_of(SeqType::Bucket, Some(&f)), [1, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sequence_of(&self, seq: SeqType, tags: Option<&TagFilter>) -> Vec<usize> {
        let ratios: Vec<u64> = self
            .ops
            .iter()
            .map(|o| match tags {
                Some(f) if !f.matches(&o.tags) => 0,
                _ => o.ratio,
            })
            .collect();
        seq.sequence(&ratios)
    }

    /// The template variables the file uses (`<<name:default>>` and
    /// `TEMPLATE(name,default)`), in order of first use: `name=value` pairs with
    /// these names set them and are not params.
    ///
    /// ```
    /// let loader = paceline::Loader::new(&["d"]);
    /// let a = loader.from_str("params: {driver: d, cycles: <<n:5>>}\nops: {o: x}", "a")?;
    /// assert_eq!((a.template_vars(), a.params().cycles.len()), (&["n".to_string()][..], 5));
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn template_vars(&self) -> &[String] {
        &self.template_vars
    }

    /// The 1-based (line, column) in the file of what a driver's error is about,
    /// by the drivers' convention for messages: `op `NAME`: field `FIELD`: ...`
    /// points at the op's field (or the op), `param `NAME`: ...` at the param.
    ///
    /// ```
    /// let text = "params: {driver: d}\nops:\n  get:\n    uri: /x\n";
    /// let a = paceline::Activity::from_str(text, "a.yaml", &["d"])?;
    /// let e = paceline::DriverError::new("d", "op `get`: unknown field `uri`; did you mean `url`?");
    /// assert_eq!(a.position_of(&e), Some((4, 5)));
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn position_of(&self, e: &super::drivers::DriverError) -> Option<(usize, usize)> {
        use super::locate::{Seg, Target, locate};
        let msg = e.message();
        let quoted_after = |word: &str| {
            let i = msg.find(&format!("{word} `"))? + word.len() + 2;
            let len = msg[i..].find('`')?;
            Some(msg[i..i + len].to_string())
        };
        if let Some(op) = quoted_after("op") {
            let i = self.ops.iter().position(|o| o.name == op)?;
            let path = &self.op_paths[i];
            if let Some(field) = quoted_after("field") {
                let mut p = path.clone();
                p.push(Seg::Key(field));
                if let Some(at) = locate(&self.text, &p, Target::Key) {
                    return Some(at);
                }
            }
            return locate(&self.text, path, Target::Key)
                .or_else(|| locate(&self.text, path, Target::Value));
        }
        let param = quoted_after("param")?;
        locate(
            &self.text,
            &[Seg::Key("params".into()), Seg::Key(param)],
            Target::Key,
        )
    }

    /// Whether the file wrote `stride` (else each run's stride is its op
    /// sequence's length).
    pub(crate) fn stride_given(&self) -> bool {
        self.stride_given
    }

    /// The op that cycle `cycle` runs: `sequence[cycle % len]`.
    ///
    /// ```
    /// let a = paceline::Activity::from_str("params: {driver: d}\nops: {a: x, b: y}", "a", &["d"])?;
    /// assert_eq!(a.op_for_cycle(3).name, "b");
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn op_for_cycle(&self, cycle: u64) -> &Op {
        let i = self.sequence[(cycle % self.sequence.len() as u64) as usize];
        &self.ops[i]
    }

    /// The scenarios, in the order written.
    ///
    /// ```
    /// let a = paceline::Activity::from_str("params: {driver: d}\nops: {o: x}", "a", &["d"])?;
    /// assert!(a.scenarios().is_empty());
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn scenarios(&self) -> &[Scenario] {
        &self.scenarios
    }

    /// Every run this file describes, each with its overrides: the activity itself
    /// (`"params"`) and each scenario's `run`/`start` step (`"scenario NAME step
    /// N"`), with `overrides` (say, from the command line) over each, as
    /// [`run_scenario`](crate::run_scenario) applies them.
    ///
    /// ```
    /// let a = paceline::Activity::from_str(
    ///     "params: {driver: d}\nops: {o: x}\nscenarios: {s: [{run: {threads: 4}}, {wait: 1s}]}", "a", &["d"])?;
    /// let cli = paceline::ParamOverrides { cycles: Some(paceline::Cycles::parse("10")?), ..Default::default() };
    /// let runs = a.runs(&cli);
    /// assert_eq!(runs.len(), 2);
    /// assert_eq!(runs[1].0, "scenario `s` step 1");
    /// assert_eq!((runs[1].1.threads, runs[1].1.cycles.unwrap().len()), (Some(4), 10));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn runs(&self, overrides: &ParamOverrides) -> Vec<(String, ParamOverrides)> {
        // A file that leaves the driver to its steps does not run on its own.
        let mut runs = if self.params.driver.is_empty() && overrides.driver.is_none() {
            Vec::new()
        } else {
            vec![("params".to_string(), overrides.clone())]
        };
        for sc in &self.scenarios {
            for (i, step) in sc.steps.iter().enumerate() {
                if let Step::Run(o) | Step::Start(o) = step {
                    let what = format!("scenario `{}` step {}", sc.name, i + 1);
                    runs.push((what, o.then(overrides)));
                }
            }
        }
        runs
    }

    /// The scenario called `name`.
    ///
    /// ```
    /// let a = paceline::Activity::from_str("params: {driver: d}\nops: {o: x}", "a", &["d"])?;
    /// assert!(a.scenario("default").is_none());
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn scenario(&self, name: &str) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| s.name == name)
    }
}
