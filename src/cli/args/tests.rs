//! The command line's parsing: every command, its options and its refusals.

use super::parse::parse_param;
use super::*;
use clap::CommandFactory;
use std::net::Ipv4Addr;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("paceline").chain(args.iter().copied()))
}

fn run(args: &[&str]) -> RunArgs {
    match parse(args).map(|c| c.command) {
        Ok(Command::Run(r)) => r,
        other => panic!("not a run: {other:?}"),
    }
}

/// Issue 21: `--stop-timeout` and the engine's stop grace were two settings,
/// each 10 s by default; the grace now comes from the timeout.
#[test]
fn the_stop_timeout_sets_the_stop_grace_just_under_it() {
    let default = run(&["run", "driver=diag"]).stop_timeout;
    assert_eq!(default, paceline::DEFAULT_STOP_GRACE);
    assert_eq!(
        stop_grace_for(Duration::from_secs(1)),
        Duration::from_millis(900)
    );
    assert_eq!(
        stop_grace_for(Duration::from_secs(10)),
        Duration::from_millis(9750)
    );
    assert_eq!(stop_grace_for(Duration::ZERO), Duration::ZERO);
    let two = run(&["run", "driver=diag", "--stop-timeout", "2s"]).stop_timeout;
    assert_eq!(stop_grace_for(two), Duration::from_millis(1800));
}

#[test]
fn the_definitions_are_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn run_with_a_file_and_ordered_parameters() {
    let r = run(&["run", "w.yaml", "rate=5000,1.0", "threads=8", "rate=6000"]);
    let inputs = r.inputs().unwrap_or_default();
    assert_eq!(inputs.file, Some(PathBuf::from("w.yaml")));
    assert_eq!(
        inputs.params,
        [
            ("rate".to_string(), "5000,1.0".to_string()),
            ("threads".to_string(), "8".to_string()),
            ("rate".to_string(), "6000".to_string()),
        ]
    );
    assert_eq!(r.report_interval, Duration::from_secs(10));
    assert_eq!(r.progress(), None);
    assert_eq!(
        (&r.summary_json, &r.csv, &r.hdr_log, &r.control),
        (&None, &None, &None, &None)
    );
}

#[test]
fn run_without_a_file() {
    let r = run(&["run", "driver=diag", "cycles=10", "op=a=b"]);
    let inputs = r.inputs().unwrap_or_default();
    assert_eq!(inputs.file, None);
    assert_eq!(inputs.params[2], ("op".to_string(), "a=b".to_string()));
}

#[test]
fn run_with_every_option() {
    let r = run(&[
        "run",
        "w.yaml",
        "--report-interval",
        "500ms",
        "--summary-json",
        "s.json",
        "--csv",
        "i.csv",
        "--hdr-log",
        "l.hlog",
        "--html",
        "r.html",
        "--control",
        "0.0.0.0:7878",
        "--control-allow-remote",
        "--metrics",
        "9464",
        "--no-progress",
    ]);
    assert_eq!(r.report_interval, Duration::from_millis(500));
    assert_eq!(r.summary_json, Some(PathBuf::from("s.json")));
    assert_eq!(r.csv, Some(PathBuf::from("i.csv")));
    assert_eq!(r.hdr_log, Some(PathBuf::from("l.hlog")));
    assert_eq!(r.html, Some(PathBuf::from("r.html")));
    assert_eq!(r.control, "0.0.0.0:7878".parse().ok());
    assert!(r.control_allow_remote);
    assert_eq!(r.metrics, "127.0.0.1:9464".parse().ok());
    assert_eq!(r.progress(), Some(false));
}

#[test]
fn report_takes_a_log_an_optional_summary_and_an_output() {
    let cli = Cli::try_parse_from([
        "paceline",
        "report",
        "run.hlog",
        "--summary-json",
        "s.json",
        "-o",
        "r.html",
    ]);
    match cli.map(|c| c.command) {
        Ok(Command::Report(r)) => {
            assert_eq!(r.hdr_logs, [PathBuf::from("run.hlog")]);
            assert_eq!(r.summary_json, Some(PathBuf::from("s.json")));
            assert_eq!(r.output, PathBuf::from("r.html"));
        }
        other => panic!("{other:?}"),
    }
    assert!(Cli::try_parse_from(["paceline", "report", "run.hlog"]).is_err());
    // Several logs (a fleet's), merged into one report.
    match parse(&["report", "a.hlog", "b.hlog", "-o", "r.html"]).map(|c| c.command) {
        Ok(Command::Report(r)) => {
            assert_eq!(
                r.hdr_logs,
                [PathBuf::from("a.hlog"), PathBuf::from("b.hlog")]
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(parse(&["report", "-o", "r.html"]).is_err());
}

#[test]
fn every_preset_calibrate_recommends_is_a_waiting_flag() {
    // Regression (issue 17): calibrate recommended `waiting=spin`, which no
    // option selected.
    for name in ["adaptive", "spin_sleep", "spin", "sleep"] {
        assert!(run(&["run", "--waiting", name]).waiting.is_some(), "{name}");
    }
    assert!(parse(&["run", "--waiting", "fast"]).is_err());
}

#[test]
fn a_bare_report_interval_is_seconds() {
    // Regression (issue 17): `--report-interval 1` was refused while `wait: 1`
    // means one second.
    assert_eq!(
        run(&["run", "--report-interval", "1"]).report_interval,
        Duration::from_secs(1)
    );
    assert_eq!(
        run(&["run", "--report-interval", "0.5"]).report_interval,
        Duration::from_millis(500)
    );
}

#[test]
fn the_last_progress_flag_wins() {
    assert_eq!(
        run(&["run", "--no-progress", "--progress"]).progress(),
        Some(true)
    );
    assert_eq!(
        run(&["run", "--progress", "--no-progress"]).progress(),
        Some(false)
    );
}

#[test]
fn a_file_after_parameters_is_refused_with_a_fix() {
    let r = run(&["run", "cycles=10", "w.yaml"]);
    let err = r.inputs().err().unwrap_or_default();
    assert_eq!(
        err,
        "`w.yaml` is not a parameter: after the file (and a scenario name), give \
         parameters as NAME=VALUE (such as cycles=1000); the file, if any, comes first"
    );
    let r = run(&["run", "w.yaml", "main", "extra"]);
    assert!(r.inputs().is_err());
}

#[test]
fn the_word_after_the_file_is_a_scenario() {
    let r = run(&["run", "w.yaml", "default.rampup", "cycles=5"]);
    let inputs = r.inputs().unwrap_or_default();
    assert_eq!(inputs.file, Some(PathBuf::from("w.yaml")));
    assert_eq!(inputs.scenario.as_deref(), Some("default.rampup"));
    assert_eq!(inputs.params, [("cycles".to_string(), "5".to_string())]);
}

#[test]
fn malformed_parameters_are_usage_errors() {
    for (arg, says) in [
        ("=5", "the name before `=` is empty"),
        ("cy cles=5", "the name may not contain ` `"),
    ] {
        let err = parse(&["run", arg])
            .err()
            .map(|e| (e.exit_code(), e.to_string()));
        let (code, text) = err.unwrap_or_default();
        assert_eq!(code, 2, "{arg}");
        assert!(text.contains(says), "{arg}: {text}");
    }
    assert_eq!(
        parse_param("cycles"),
        Err("malformed parameter `cycles`: write NAME=VALUE, such as cycles=1000".into())
    );
    assert_eq!(parse_param(" a =b"), Ok(("a".into(), "b".into())));
    assert_eq!(parse_param("a="), Ok(("a".into(), String::new())));
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let code = |args: &[&str]| parse(args).err().map(|e| e.exit_code());
    assert_eq!(code(&["run", "--bogus"]), Some(2));
    assert_eq!(code(&["frobnicate"]), Some(2));
    assert_eq!(code(&[]), Some(2));
    assert_eq!(code(&["check"]), Some(2));
    assert_eq!(code(&["run", "--report-interval", "ten"]), Some(2));
    assert_eq!(code(&["run", "--report-interval", "0s"]), Some(2));
    assert_eq!(code(&["run", "--control-allow-remote"]), Some(2));
    assert_eq!(code(&["run", "--control", "nowhere"]), Some(2));
    assert_eq!(code(&["run", "--metrics", "nowhere"]), Some(2));
    assert_eq!(code(&["--help"]), Some(0));
    assert_eq!(code(&["run", "--help"]), Some(0));
    assert_eq!(code(&["--version"]), Some(0));
}

#[test]
fn check_list_and_calibrate() {
    match parse(&["check", "w.yaml", "cycles=5"]).map(|c| c.command) {
        Ok(Command::Check(c)) => {
            let i = c.file_and_params().unwrap_or_default();
            assert_eq!(i.file, Some(PathBuf::from("w.yaml")));
            assert_eq!(i.params, [("cycles".to_string(), "5".to_string())]);
        }
        other => panic!("{other:?}"),
    }
    // Issue 24 item 16: params alone, as `run` takes them.
    match parse(&["check", "driver=diag", "cycles=5"]).map(|c| c.command) {
        Ok(Command::Check(c)) => {
            let i = c.file_and_params().unwrap_or_default();
            assert_eq!(i.file, None);
            assert_eq!(i.params.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    match parse(&["check", "a.yaml", "b.yaml"]).map(|c| c.command) {
        Ok(Command::Check(c)) => {
            let e = c.file_and_params().unwrap_err();
            assert!(e.contains("`b.yaml` is not a parameter"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        parse(&["list"]).map(|c| c.command),
        Ok(Command::List)
    ));
    assert!(matches!(
        parse(&["calibrate"]).map(|c| c.command),
        Ok(Command::Calibrate)
    ));
}

#[test]
fn every_command_has_examples_in_its_help() {
    let mut cmd = Cli::command();
    assert!(cmd.render_long_help().to_string().contains("Examples:"));
    for sub in ["run", "check", "list", "calibrate"] {
        let help = cmd
            .find_subcommand_mut(sub)
            .map(|c| c.render_long_help().to_string())
            .unwrap_or_default();
        assert!(help.contains("Examples:"), "{sub}: {help}");
        assert!(help.contains(&format!("paceline {sub}")), "{sub}");
    }
}

#[test]
fn control_addresses() {
    let local = |p: u16| Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, p)));
    assert_eq!(parse_control_addr("7878"), local(7878));
    assert_eq!(parse_control_addr(":7878"), local(7878));
    assert_eq!(parse_control_addr("localhost:7878"), local(7878));
    assert_eq!(parse_control_addr("127.0.0.1:0"), local(0));
    assert_eq!(
        parse_control_addr("[::1]:80"),
        Ok("[::1]:80".parse().unwrap_or(SocketAddr::from(([0; 4], 0))))
    );
    assert!(parse_control_addr("nowhere").is_err());
    assert!(parse_control_addr("localhost:x").is_err());
}
