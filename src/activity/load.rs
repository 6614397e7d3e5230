//! [`Loader`]: reads, parses and validates activity files.

use super::error::{ActivityError, Problem};
use super::locate::{Target, locate};
use super::model::Activity;
use super::validate::{Raw, Validator};
use std::collections::BTreeMap;
use std::path::Path;

/// Loads activity files against a set of known drivers.
///
/// Drivers are registered by the engine; the loader only needs their names, and,
/// optionally, the params each accepts.
///
/// ```
/// use paceline::Loader;
/// let loader = Loader::new(&["diag", "http"]).driver_params("http", &["host", "port"]);
/// let err = loader
///     .from_str("params: {driver: http, hots: x}\nops: {get: '/'}", "web.yaml")
///     .unwrap_err();
/// assert_eq!(
///     err.problems()[0].to_string(),
///     "web.yaml:1:24: unknown param `hots` for driver `http`; did you mean `host`?"
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct Loader {
    pub(crate) drivers: Vec<String>,
    pub(crate) driver_params: BTreeMap<String, Vec<String>>,
    /// The driver the command line names: it runs whatever the file says, and
    /// the file's params are checked against it.
    pub(crate) run_driver: Option<String>,
    /// Values for template variables (`<<name:default>>`, `TEMPLATE(name,default)`).
    pub(crate) vars: BTreeMap<String, String>,
    /// The scenario or step (`SCENARIO.STEP`) to validate for, as NB5 resolves
    /// a step: problems outside it do not fail the load.
    pub(crate) focus: Option<String>,
}

impl Loader {
    /// A loader that knows the drivers `drivers`.
    ///
    /// ```
    /// let loader = paceline::Loader::new(&["diag"]);
    /// assert!(loader.from_str("params: {driver: diag}\nops: {o: x}", "a").is_ok());
    /// ```
    pub fn new(drivers: &[&str]) -> Self {
        Self {
            drivers: drivers.iter().map(|d| d.to_string()).collect(),
            driver_params: BTreeMap::new(),
            run_driver: None,
            vars: BTreeMap::new(),
            focus: None,
        }
    }

    /// Names the driver that will run (`driver=NAME` on a command line): a file
    /// that names no driver runs with it, one that names another (even one this
    /// loader does not know) is overridden, and the file's params are checked
    /// against it. By default, the file's own driver.
    ///
    /// ```
    /// let loader = paceline::Loader::new(&["stdout"]).run_driver("stdout");
    /// let a = loader.from_str("params: {driver: cql}\nops: {o: x}", "a")?;
    /// assert_eq!(a.params().driver, "stdout");
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn run_driver(mut self, name: &str) -> Self {
        self.run_driver = Some(name.to_string());
        self
    }

    /// Sets template variables: `<<name:default>>` and `TEMPLATE(name,default)`
    /// anywhere in the file take these values instead of their defaults. By
    /// default, none are set.
    ///
    /// ```
    /// let loader = paceline::Loader::new(&["d"]).template_vars([("n", "7")]);
    /// let a = loader.from_str("params: {driver: d, cycles: TEMPLATE(n,2)}\nops: {o: x}", "a")?;
    /// assert_eq!(a.params().cycles.len(), 7);
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn template_vars<'a, I>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        for (k, v) in vars {
            self.vars.insert(k.to_string(), v.to_string());
        }
        self
    }

    /// Validates for one scenario (`NAME`) or one step of it (`NAME.STEP`), as
    /// NoSQLBench resolves a step: only the problems of the file itself, of
    /// those steps, of the ops their tag filters select and of the bindings
    /// those ops use fail the load; a bad binding or op that no such step uses
    /// does not. A name that is no scenario or step of the file focuses on
    /// nothing: every problem counts. By default, every problem counts.
    ///
    /// ```
    /// let text = "params: {driver: d}\nbindings: {bad: Nope(), k: Mod(3)}\n\
    ///     blocks:\n  a: {ops: {o: 'x {k}'}}\n  b: {ops: {o: 'y {bad}'}}\n\
    ///     scenarios:\n  s: {one: run tags==block:a, two: run tags==block:b}";
    /// let loader = paceline::Loader::new(&["d"]);
    /// assert!(loader.from_str(text, "f").is_err());
    /// assert!(loader.clone().focus("s.one").from_str(text, "f").is_ok());
    /// assert!(loader.focus("s.two").from_str(text, "f").is_err());
    /// ```
    pub fn focus(mut self, scenario_or_step: &str) -> Self {
        self.focus = Some(scenario_or_step.to_string());
        self
    }

    /// Declares the params `driver` accepts besides the core ones; any other key
    /// under `params` is then an error for that driver. By default, a driver
    /// accepts any extra key except near-misses of the core params (`thread` is
    /// taken for a typo of `threads`).
    ///
    /// ```
    /// let loader = paceline::Loader::new(&["d"]).driver_params("d", &["host"]);
    /// assert!(loader.from_str("params: {driver: d, host: h}\nops: {o: x}", "a").is_ok());
    /// assert!(loader.from_str("params: {driver: d, port: 1}\nops: {o: x}", "a").is_err());
    /// ```
    pub fn driver_params(mut self, driver: &str, params: &[&str]) -> Self {
        self.driver_params.insert(
            driver.to_string(),
            params.iter().map(|p| p.to_string()).collect(),
        );
        self
    }

    /// Reads and validates the file at `path`.
    ///
    /// ```
    /// let loader = paceline::Loader::new(&["diag", "stdout", "http"]);
    /// let a = loader.load(concat!(env!("CARGO_MANIFEST_DIR"), "/activities/quickstart.yaml"))?;
    /// assert_eq!(a.params().driver, "diag");
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn load(&self, path: impl AsRef<Path>) -> Result<Activity, ActivityError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| ActivityError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        self.from_str(&text, &path.display().to_string())
    }

    /// Validates `text`, naming it `source` in positions (and taking the default
    /// alias from it).
    ///
    /// ```
    /// let err = paceline::Loader::new(&["diag"])
    ///     .from_str("params: {driver: diag}\nops: {o: 'x {nope}'}", "t.yaml")
    ///     .unwrap_err();
    /// assert_eq!(err.problems()[0].column, 13); // the `{` of `{nope}`
    /// ```
    pub fn from_str(&self, text: &str, source: &str) -> Result<Activity, ActivityError> {
        let (expanded, template_vars) = super::template_vars::expand(text, &self.vars);
        let text = expanded.as_str();
        if let Some((line, column)) = super::yaml_depth::too_deep(text) {
            return Err(ActivityError::Invalid {
                problems: vec![Problem {
                    source: source.to_string(),
                    line,
                    column,
                    message: format!(
                        "not valid YAML: collections nested more than {} deep (maps and \
                         lists, in block or `[`/`{{` style)",
                        super::yaml_depth::MAX_DEPTH
                    ),
                    help: Some("flatten the structure".into()),
                }],
            });
        }
        let doc: serde_yaml::Value = match serde_yaml::from_str(text) {
            Ok(doc) => doc,
            Err(e) => {
                let msg = e.to_string();
                let msg = match msg.rfind(" at line ") {
                    Some(i) => msg[..i].to_string(),
                    None => msg,
                };
                // Errors the parser gives no mark (or the mark of the enclosing
                // map) are placed here (issue 25, item 10).
                let (msg, at) = super::yaml_errors::place(text, &msg);
                let (line, column) = at
                    .or_else(|| e.location().map(|l| (l.line(), l.column())))
                    .unwrap_or((1, 1));
                // YAML indents with spaces only; the parser's words for a tab
                // do not always say "tab".
                let tab_at = text
                    .lines()
                    .nth(line.saturating_sub(1))
                    .and_then(|l| l.chars().nth(column.saturating_sub(1)))
                    == Some('\t');
                let (message, help) = if tab_at || msg.contains("tab") {
                    (
                        "not valid YAML: a tab character".to_string(),
                        Some("YAML indents with spaces only: replace the tab with spaces".into()),
                    )
                } else {
                    (format!("not valid YAML: {msg}"), None)
                };
                return Err(ActivityError::Invalid {
                    problems: vec![Problem {
                        source: source.to_string(),
                        line,
                        column,
                        message,
                        help,
                    }],
                });
            }
        };
        let mut validator = Validator::new(self);
        validator.file_vars = template_vars.clone();
        let activity = validator
            .activity(&doc, source)
            .map_err(|raws| ActivityError::Invalid {
                problems: located(text, source, raws),
            })?;
        Ok(Activity {
            template_vars,
            text: text.to_string(),
            ..activity
        })
    }
}

/// How many problems are located and shown; the rest are counted.
pub(crate) const SHOWN_PROBLEMS: usize = 100;

/// The problems with their positions, in file order: the first
/// [`SHOWN_PROBLEMS`] found, then one that counts the rest (at the place of the
/// first of them). Locating a problem parses the file once, so the count is
/// bounded to keep a file with thousands of mistakes linear (issue 25, item 9).
fn located(text: &str, source: &str, mut raws: Vec<Raw>) -> Vec<Problem> {
    let rest = raws.split_off(raws.len().min(SHOWN_PROBLEMS));
    let mut problems: Vec<Problem> = raws
        .into_iter()
        .map(|r| position(text, source, r))
        .collect();
    problems.sort_by_key(|p| (p.line, p.column));
    if let Some(first) = rest.first() {
        let n = rest.len();
        let at = position(text, source, first.clone());
        problems.push(Problem {
            message: format!(
                "and {n} more problem{} (the first {SHOWN_PROBLEMS} are shown), the next here: {}",
                if n == 1 { "" } else { "s" },
                at.message
            ),
            help: Some("fix the ones shown and check again".into()),
            ..at
        });
    }
    problems
}

/// Looks up a problem's position; falls back to the nearest ancestor that can
/// be found, then to the start of the file.
fn position(text: &str, source: &str, raw: Raw) -> Problem {
    let mut found = None;
    let mut path = raw.path.as_slice();
    let mut target = raw.target;
    loop {
        if let Some(at) = locate(text, path, target) {
            found = Some((at, path.len() == raw.path.len()));
            break;
        }
        match path.split_last() {
            Some((_, rest)) if !rest.is_empty() => {
                path = rest;
                target = Target::Key;
            }
            _ => break,
        }
    }
    let (line, mut column) = found.map_or((1, 1), |(at, _)| at);
    let exact = found.is_some_and(|(_, exact)| exact);
    if let (Some(offset), true, Target::Value) = (raw.offset, exact, raw.target) {
        column = inside_scalar(text, line, column, offset);
    }
    Problem {
        source: source.to_string(),
        line,
        column,
        message: raw.message,
        help: raw.help,
    }
}

/// The column of character `offset` of a one-line scalar starting at `column`:
/// past the opening quote for a quoted one; block scalars keep their start.
fn inside_scalar(text: &str, line: usize, column: usize, offset: usize) -> usize {
    let Some(line_text) = text.lines().nth(line - 1) else {
        return column;
    };
    let chars: Vec<char> = line_text.chars().collect();
    let shift = match chars.get(column - 1) {
        Some('\'' | '"') => 1,
        Some('|' | '>') | None => return column,
        Some(_) => 0,
    };
    let target = column + shift + offset;
    if target <= chars.len() {
        target
    } else {
        column
    }
}
