//! Issue 22: "a password is never printed", in messages that quote what the
//! user wrote (review of the secrets merge, p15): the http driver's URL
//! errors (at load and in each op's error, hence `first_errors`),
//! `paceline check`'s plan of scenario steps, and a URL given without `url=`.
//! No server: the http runs go to a closed loopback port or fail before any
//! connect.

mod support;

use support::bin::{run, temp, text, write_temp};

const SECRET: &str = "s3cret";

/// Runs `args`: its exit code and its stdout and stderr, asserting neither
/// holds the password.
fn hides(args: &[&str]) -> (i32, String, String) {
    let out = run(args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        !stdout.contains(SECRET) && !stderr.contains(SECRET),
        "{args:?}:\n{stdout}\n{stderr}"
    );
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// Regression (review p15, finding 2): `base_url=https://user:s3cret@h` said
/// "credentials in a URL are not sent" while printing them.
#[test]
fn a_base_url_s_password_is_not_in_its_error() {
    for base in [
        "base_url=http://user:s3cret@127.0.0.1:1",
        "base_url=https://user:s3cret@127.0.0.1:1/x",
    ] {
        let (code, _, stderr) = hides(&["run", "driver=http", "cycles=1", base, "op=GET /"]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("user:***@127.0.0.1"), "{stderr}");
    }
}

/// Regression (review p15, finding 2): a URL rendered from bindings failed
/// each op with a message quoting it, password and all, which went into the
/// summary's `first_errors` (text and JSON).
#[test]
fn an_op_url_s_password_is_not_in_first_errors() {
    let file = write_temp(
        "op-url-secret.yaml",
        "params: {driver: http, cycles: 3, errors: count}\n\
         bindings:\n  pw: Constant('s3cret')\n\
         ops:\n  o: {method: GET, uri: 'http://u:{pw}@127.0.0.1:1/x'}\n",
    );
    let json = temp("op-url-secret.json");
    let json_arg = json.display().to_string();
    let (code, stdout, stderr) =
        hides(&["run", &file, "--no-progress", "--summary-json", &json_arg]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let body = std::fs::read_to_string(&json).unwrap();
    assert!(!body.contains(SECRET), "{body}");
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    let first = &doc["activities"][0]["first_errors"];
    let messages: Vec<&str> = first
        .as_object()
        .unwrap_or_else(|| panic!("no first_errors in {body}"))
        .values()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("u:***@127.0.0.1")),
        "{messages:?}"
    );
}

/// Regression (review p15, finding 3): `paceline check` printed each scenario
/// step's params as written, `password=` and a URL's password among them.
#[test]
fn check_hides_passwords_in_scenario_steps() {
    let file = write_temp(
        "check-secret.yaml",
        "params: {driver: postgres, url: 'postgres://app@127.0.0.1:1/db', cycles: 10}\n\
         ops:\n  o: {raw: SELECT 1}\n\
         scenarios:\n  default:\n    \
         - run url=postgres://app:s3cret@127.0.0.1:5432/db password=s3cret cycles=5\n",
    );
    let (code, stdout, stderr) = hides(&["check", &file]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("password=***"), "{stdout}");
    assert!(stdout.contains("app:***@127.0.0.1"), "{stdout}");
}

/// Regression (review p15, finding 5): a URL given without `url=` was
/// echoed whole, as a file, a scenario name or "not a parameter".
#[test]
fn a_url_without_url_eq_is_not_echoed_with_its_password() {
    let url = "postgres://app:s3cret@127.0.0.1/db";
    let cases: [&[&str]; 5] = [
        &["run", url],
        &["run", "postgres-keyvalue", url],
        &["run", "postgres-keyvalue", "main", url],
        &["check", "postgres-keyvalue", url],
        &["findmax", "postgres-keyvalue", url],
    ];
    for args in cases {
        let (code, stdout, stderr) = hides(args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(stderr.contains("app:***@127.0.0.1"), "{args:?}: {stderr}");
    }
}
