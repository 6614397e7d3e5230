//! Params given as `NAME=VALUE` (on a command line): validated exactly as the
//! same keys under `params:` in a file.

use super::error::{ActivityError, Problem};
use super::load::Loader;
use super::locate::Seg;
use super::model::{Activity, ParamOverrides};
use super::validate::Validator;
use serde_yaml::{Mapping, Value};

/// The source name problems with command-line params carry; their `line` is the
/// param's 1-based position among the pairs.
pub const COMMAND_LINE: &str = "command line";

/// A value as YAML reads it (`4` a number, `true` a boolean, `{rate: 5}` a map),
/// or the text itself when it is not valid YAML on its own.
pub(crate) fn scalar(text: &str) -> Value {
    match serde_yaml::from_str::<Value>(text) {
        Ok(Value::Null) if !text.trim().is_empty() && text.trim() != "null" => {
            Value::String(text.to_string())
        }
        // A number that underflowed to 0 (`1e-400`) stays text, so that the
        // param says it is not 0 (audit p17, L1: `rate=1e-400` paused the run).
        Ok(Value::Number(n)) if n.as_f64() == Some(0.0) && names_non_zero(text) => {
            Value::String(text.to_string())
        }
        Ok(v) => v,
        Err(_) => Value::String(text.to_string()),
    }
}

/// Whether a number's text has a non-zero digit before its exponent.
fn names_non_zero(text: &str) -> bool {
    let mantissa = text.trim().split(['e', 'E']).next().unwrap_or("");
    mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

impl Loader {
    /// Validates `NAME=VALUE` pairs as param overrides, as if written under
    /// `params:` (a `driver` among them, or else `base_driver`, decides which
    /// driver params are known). Each problem's source is [`COMMAND_LINE`] and its
    /// line the pair's position (1-based).
    ///
    /// ```
    /// use paceline::Drivers;
    /// let loader = Drivers::builtin().loader();
    /// let pairs = [("threads".to_string(), "4".to_string()), ("rate".into(), "10K,1.0".into())];
    /// let o = loader.overrides(&pairs, Some("diag"))?;
    /// assert_eq!(o.threads, Some(4));
    /// assert_eq!(o.rate.unwrap().rate(), 10_000.0);
    ///
    /// let bad = [("cycles".to_string(), "x".to_string()), ("thread".into(), "2".into())];
    /// let err = loader.overrides(&bad, Some("diag")).unwrap_err();
    /// let lines: Vec<String> = err.problems().iter().map(|p| p.to_string()).collect();
    /// assert!(lines[0].starts_with("command line:1:1: "), "{lines:?}");
    /// assert!(lines[1].contains("unknown param `thread` for driver `diag`; did you mean `threads`?"), "{lines:?}");
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn overrides(
        &self,
        pairs: &[(String, String)],
        base_driver: Option<&str>,
    ) -> Result<ParamOverrides, ActivityError> {
        self.overrides_skipping(pairs, base_driver, &[])
    }

    /// [`overrides`](Self::overrides) leaving out the pairs named in `skip`
    /// (problems still carry each pair's position among all of `pairs`).
    fn overrides_skipping(
        &self,
        pairs: &[(String, String)],
        base_driver: Option<&str>,
        skip: &[&str],
    ) -> Result<ParamOverrides, ActivityError> {
        let mut m = Mapping::new();
        for (k, v) in pairs.iter().filter(|(k, _)| !skip.contains(&k.as_str())) {
            m.insert(Value::String(k.clone()), scalar(v));
        }
        let mut validator = Validator::new(self);
        let o = validator.params(&m, &[], base_driver);
        let raws = validator.into_problems();
        if raws.is_empty() {
            return Ok(o);
        }
        let mut problems: Vec<Problem> = raws
            .into_iter()
            .map(|r| {
                let line = match r.path.first() {
                    Some(Seg::Key(k)) => {
                        pairs.iter().rposition(|(n, _)| n == k).map_or(1, |i| i + 1)
                    }
                    _ => 1,
                };
                Problem {
                    source: COMMAND_LINE.to_string(),
                    line,
                    column: 1,
                    message: r.message,
                    help: r.help,
                }
            })
            .collect();
        problems.sort_by_key(|p| p.line);
        Err(ActivityError::Invalid { problems })
    }

    /// An activity made from params alone (no file): `driver` must be among the
    /// pairs; it has one op, `op`, whose `stmt` is the pair `op=TEXT` (a template
    /// that may use the binding `cycle`, the cycle number; by default `{cycle}`),
    /// and its alias defaults to the driver's name. The other pairs are applied as
    /// with [`overrides`](Self::overrides) and returned with it.
    ///
    /// ```
    /// use paceline::Drivers;
    /// let loader = Drivers::builtin().loader();
    /// let pairs = [("driver".to_string(), "diag".to_string()), ("cycles".into(), "1M".into())];
    /// let (activity, o) = loader.from_params(&pairs)?;
    /// assert_eq!(activity.params().with(&o).cycles.len(), 1_000_000);
    /// assert_eq!(activity.params().alias, "diag");
    /// assert!(loader.from_params(&[]).is_err());
    ///
    /// let pairs = [("driver".to_string(), "stdout".to_string()), ("op".into(), "GET /item/{cycle}".into())];
    /// let (activity, _) = loader.from_params(&pairs)?;
    /// assert_eq!(paceline::OpPlan::new(&activity, &Default::default()).render_field(7, "stmt").as_deref(), Some("GET /item/7"));
    /// # Ok::<(), paceline::ActivityError>(())
    /// ```
    pub fn from_params(
        &self,
        pairs: &[(String, String)],
    ) -> Result<(Activity, ParamOverrides), ActivityError> {
        let Some((_, driver)) = pairs.iter().rev().find(|(k, _)| k == "driver") else {
            return Err(ActivityError::Invalid {
                problems: vec![Problem {
                    source: COMMAND_LINE.to_string(),
                    line: 1,
                    column: 1,
                    message: "no activity file and no `driver=NAME`".to_string(),
                    help: Some(format!(
                        "give an activity file, or params such as `driver=diag cycles=1M`; known drivers: {}",
                        super::suggest::list(self.drivers.iter().map(String::as_str))
                    )),
                }],
            });
        };
        let op = pairs
            .iter()
            .rev()
            .find(|(k, _)| k == "op")
            .map_or("{cycle}", |(_, v)| v.as_str());
        let o = self.overrides_skipping(pairs, None, &["op"])?;
        let mut m = Mapping::new();
        m.insert("driver".into(), Value::String(driver.clone()));
        m.insert("alias".into(), Value::String(driver.clone()));
        let mut doc = Mapping::new();
        doc.insert("params".into(), Value::Mapping(m));
        let mut b = Mapping::new();
        b.insert("cycle".into(), Value::String("Identity()".into()));
        doc.insert("bindings".into(), Value::Mapping(b));
        let mut ops = Mapping::new();
        ops.insert("op".into(), Value::String(op.to_string()));
        doc.insert("ops".into(), Value::Mapping(ops));
        let text = serde_yaml::to_string(&Value::Mapping(doc)).unwrap_or_default();
        // A problem in the made-up file is about the `driver` pair or the `op`
        // pair: it takes that pair's position, not a line of the made-up text.
        let place = |key: &str| pairs.iter().rposition(|(k, _)| k == key).map(|i| i + 1);
        let activity = self.from_str(&text, COMMAND_LINE).map_err(|e| match e {
            ActivityError::Invalid { mut problems } => {
                for p in &mut problems {
                    let about_driver = p.message.contains("driver");
                    p.line = if about_driver {
                        place("driver")
                    } else {
                        place("op")
                    }
                    .or_else(|| place("driver"))
                    .unwrap_or(1);
                    p.column = 1;
                }
                ActivityError::Invalid { problems }
            }
            other => other,
        })?;
        Ok((activity, o))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn values_read_as_yaml_scalars() {
        assert_eq!(scalar("4"), Value::Number(4.into()));
        assert_eq!(scalar("10K,1.1"), Value::String("10K,1.1".into()));
        assert_eq!(scalar("retry:3"), Value::String("retry:3".into()));
        assert_eq!(scalar("true"), Value::Bool(true));
        assert_eq!(scalar("~x"), Value::String("~x".into()));
        assert_eq!(scalar("[1,"), Value::String("[1,".into()));
    }

    /// Regression (issue 24, item 13): `threads` took up to 65536 here while the
    /// engine and the control endpoint take up to 4096; one limit everywhere.
    #[test]
    fn threads_past_the_engines_limit_are_refused_at_the_param_check() {
        let loader = Loader::new(&["diag"]);
        let pairs = |n: usize| {
            [
                ("driver".to_string(), "diag".to_string()),
                ("threads".to_string(), n.to_string()),
            ]
        };
        assert!(loader.from_params(&pairs(crate::MAX_THREADS)).is_ok());
        let e = loader
            .from_params(&pairs(crate::MAX_THREADS + 1))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("from 1 to {}", crate::MAX_THREADS)),
            "{e}"
        );
    }

    #[cfg(feature = "redis")]
    #[test]
    fn coordinate_is_a_param_on_the_command_line_in_params_and_in_steps() {
        let loader = Loader::new(&["diag"]);
        let pairs = [(
            "coordinate".to_string(),
            "redis://127.0.0.1:6379/demo".to_string(),
        )];
        let (activity, o) = loader
            .from_params(&[("driver".to_string(), "diag".to_string()), pairs[0].clone()])
            .unwrap();
        let c = o.coordinate.clone().unwrap();
        assert_eq!((c.server(), c.name()), ("redis://127.0.0.1:6379", "demo"));
        assert_eq!(o.names(), ["driver", "coordinate"]);
        let config = crate::OpPlan::new(&activity, &o).engine_config();
        assert_eq!(
            config.coordination().map(|x| x.to_string()),
            Some(c.to_string())
        );

        let file = "params: {driver: diag, coordinate: 'redis://h:1/file'}\nops: {o: x}\n\
                    scenarios: {s: [run coordinate=redis://h:1/step cycles=5]}\n";
        let a = loader.from_str(file, "c.yaml").unwrap();
        assert_eq!(
            a.params().coordinate.as_ref().map(|c| c.name()),
            Some("file")
        );
        let crate::Step::Run(step) = &a.scenarios()[0].steps[0] else {
            panic!("a run step")
        };
        let p = a.params().with(step);
        assert_eq!(p.coordinate.as_ref().map(|c| c.name()), Some("step"));
        // The command line's value wins over the file's and the step's.
        let cli = loader.overrides(&pairs, Some("diag")).unwrap();
        let p = a.params().with(&step.then(&cli));
        assert_eq!(p.coordinate.as_ref().map(|c| c.name()), Some("demo"));
    }

    #[cfg(feature = "redis")]
    #[test]
    fn a_bad_coordinate_url_is_a_problem_at_its_place() {
        let loader = Loader::new(&["diag"]);
        let cases = [
            ("redis://127.0.0.1:6379", "names no schedule"),
            ("http://127.0.0.1:6379/demo", "must start with redis://"),
            ("redis://127.0.0.1:6379/a b", "letters, digits"),
            ("redis://127.0.0.1:6379/", "is empty"),
        ];
        for (url, why) in cases {
            let pairs = [
                ("threads".to_string(), "2".to_string()),
                ("coordinate".to_string(), url.to_string()),
            ];
            let err = loader.overrides(&pairs, Some("diag")).unwrap_err();
            let line = err.problems()[0].to_string();
            assert!(
                line.starts_with("command line:2:1: coordinate URL `"),
                "{line}"
            );
            assert!(line.contains(url) && line.contains(why), "{line}");
            assert!(
                line.contains("write it as redis://HOST:PORT/NAME"),
                "{line}"
            );

            let file = format!("params:\n  driver: diag\n  coordinate: '{url}'\nops: {{o: x}}\n");
            let err = loader.from_str(&file, "c.yaml").unwrap_err();
            let line = err.problems()[0].to_string();
            assert!(line.starts_with("c.yaml:3:15: coordinate URL `"), "{line}");
            assert!(line.contains(why), "{line}");
        }
        let err = loader
            .from_str(
                "params: {driver: diag, coordinate: 5}\nops: {o: x}",
                "c.yaml",
            )
            .unwrap_err();
        assert!(
            err.problems()[0]
                .to_string()
                .contains("`coordinate` is a URL `redis://HOST:PORT/NAME`"),
            "{}",
            err.problems()[0]
        );
        let err = loader
            .from_str(
                "params: {driver: diag}\nops: {o: x}\nscenarios: {s: [run cycles=5 coordinate=redis://h:1/x/y]}\n",
                "c.yaml",
            )
            .unwrap_err();
        let line = err.problems()[0].to_string();
        assert!(
            line.starts_with("c.yaml:3:30: coordinate URL `redis://h:1/x/y`"),
            "{line}"
        );
    }

    #[cfg(not(feature = "redis"))]
    #[test]
    fn coordinate_without_the_redis_feature_says_so() {
        let loader = Loader::new(&["diag"]);
        let pairs = [("coordinate".to_string(), "redis://h:1/x".to_string())];
        let err = loader.overrides(&pairs, Some("diag")).unwrap_err();
        let line = err.problems()[0].to_string();
        assert!(line.contains("built without the `redis` feature"), "{line}");
    }

    #[test]
    fn an_unknown_driver_is_named_with_its_position() {
        let loader = Loader::new(&["diag", "stdout"]);
        let pairs = [
            ("threads".to_string(), "2".to_string()),
            ("driver".to_string(), "daig".to_string()),
        ];
        let err = loader.from_params(&pairs).unwrap_err();
        assert_eq!(
            err.problems()[0].to_string(),
            "command line:2:1: unknown driver `daig`; did you mean `diag`? known drivers: `diag`, `stdout`"
        );
    }
}
