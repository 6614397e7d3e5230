//! `paceline check`'s plan: what it shows, and the secrets it hides.

use super::*;

const SECRET: &str = "s3cret-pw";

fn plan_of(yaml: &str, vars: &[(&str, &str)]) -> String {
    let a = paceline::Loader::new(&["stdout"])
        .template_vars(vars.iter().copied())
        .from_str(yaml, "secret.yaml")
        .unwrap_or_else(|e| panic!("{e}"));
    let params: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    plan(&a, &ParamOverrides::default(), &params)
}

/// Session 15's left-over: the first cycles' rendered ops were printed
/// unmasked, so a password that reached an op through a binding or a
/// template showed in `paceline check`'s plan.
#[test]
fn the_rendered_ops_hide_a_password_from_a_binding() {
    let out = plan_of(
        "params: {driver: stdout}\n\
         bindings:\n  pw: FixedValue('s3cret-pw')\n  password: FixedValue('s3cret-pw')\n\
         ops:\n  \
           url: {stmt: 'connect postgres://app:{pw}@db:5432/x'}\n  \
           field: {stmt: 'select 1', password: '{pw}'}\n  \
           named: {stmt: 'AUTH {password}'}\n",
        &[],
    );
    assert!(!out.contains(SECRET), "{out}");
    assert!(out.contains("postgres://app:***@db:5432/x"), "{out}");
    assert!(out.contains(r#""password":"***""#), "{out}");
    assert!(out.contains("AUTH ***"), "{out}");
    // The bindings section: a binding named for a secret shows no value,
    // and its expression no literal.
    assert!(out.contains("-> *** | *** | ***"), "{out}");
}

/// In thread scope the spec's rate is each thread's: the plan said
/// `rate 1000,1.1,start,thread` beside `4 thread(s)` and no total, where
/// the run's reports show 4000/s.
#[test]
fn a_thread_scope_rate_is_said_per_thread_with_its_total() {
    let out = plan_of(
        "params: {driver: stdout, threads: 4, rate: '1000,thread'}\nops: {o: x}\n\
         scenarios:\n  s: [start, {rate: '2000,thread'}, stop]\n",
        &[],
    );
    assert!(
        out.contains("rate 1000,1.1,start,thread (per thread: 4.00K/s in total over 4 thread(s))"),
        "{out}"
    );
    assert!(
        out.contains("to 2000,1.1,start,thread (per thread)"),
        "{out}"
    );
    let out = plan_of(
        "params: {driver: stdout, threads: 4, rate: 1000}\nops: {o: x}\n",
        &[],
    );
    assert!(
        out.contains("rate 1000,1.1,start,activity, stride"),
        "{out}"
    );
}

/// The bindings' lines showed the password that the rendered ops below
/// them hid: `pw  Constant('s3cret') -> s3cret | s3cret | s3cret` above
/// `http://u:***@127.0.0.1:1/x`.
#[test]
fn a_url_s_password_from_a_binding_of_any_name_is_hidden_in_its_line() {
    let out = plan_of(
        "params: {driver: stdout}\nbindings:\n  pw: FixedValue('s3cret-pw')\n\
         ops:\n  o: {uri: 'http://u:{pw}@127.0.0.1:1/x?token={pw}&a=1'}\n",
        &[],
    );
    assert!(!out.contains(SECRET), "{out}");
    assert!(out.contains("FixedValue('***')"), "{out}");
    assert!(out.contains("-> *** | *** | ***"), "{out}");
    assert!(
        out.contains("http://u:***@127.0.0.1:1/x?token=***&a=1"),
        "{out}"
    );
    assert_eq!(
        hidden_spans(
            "http://u:pw@h/x?token=t&a=1",
            "http://u:***@h/x?token=***&a=1"
        ),
        ["pw", "t"]
    );
    assert!(hidden_spans("same", "same").is_empty());
}

#[test]
fn the_rendered_ops_hide_a_password_from_a_template() {
    let out = plan_of(
        "params: {driver: stdout}\n\
         ops:\n  o: {stmt: 'AUTH <<token:none>>', uri: 'http://h/x?password=<<token:none>>'}\n",
        &[("token", SECRET)],
    );
    assert!(!out.contains(SECRET), "{out}");
    assert!(out.contains("AUTH ***"), "{out}");
    assert!(out.contains("http://h/x?password=***"), "{out}");
    // What is no secret is shown as written.
    let out = plan_of(
        "params: {driver: stdout}\nops:\n  o: {stmt: 'select <<n:1>>'}\n",
        &[("n", "7")],
    );
    assert!(out.contains(r#"{"stmt":"select 7"}"#), "{out}");
}

/// Review A, finding 1: the bindings' lines and the other ops showed a
/// password that the op beside them wrote `***` (learned only from a
/// string's URL, not from a field named for a secret), and a password in
/// an op the first cycles do not draw was never learned.
#[test]
fn a_value_masked_in_one_op_is_hidden_in_every_line() {
    let out = plan_of(
        "params: {driver: stdout}\nbindings: {pw: FixedValue('s3cret-pw')}\n\
         ops:\n  o: {stmt: 'select 1', password: '{pw}'}\n  a: {stmt: 'AUTH default {pw}'}\n",
        &[],
    );
    assert!(!out.contains(SECRET), "{out}");
    assert!(out.contains("AUTH default ***"), "{out}");
    let out = plan_of(
        "params: {driver: stdout, seq: concat}\nbindings: {pw: FixedValue('s3cret-pw')}\n\
         ops:\n  a: {ratio: 3, stmt: 'select 1'}\n  b: {uri: 'http://u:{pw}@127.0.0.1:1/x'}\n",
        &[],
    );
    assert!(!out.contains(SECRET), "{out}");
    assert!(out.contains("-> *** | *** | ***"), "{out}");
}

/// Review A, finding 2: every value of a binding named for a secret was
/// replaced as a substring everywhere, so `token: Identity()` turned
/// `10.0.1.2:8080` into `******.***.***.***:8***8***` and the `id`
/// binding's values into `***`; `token=a` turned `name` into `n***me`.
#[test]
fn a_short_secret_hides_only_itself_not_a_host_s_digits() {
    let out = plan_of(
        "params: {driver: stdout}\nbindings: {token: Identity(), id: Identity()}\n\
         ops:\n  o: {stmt: 'GET http://10.0.1.2:8080/items/{id}?t={token}', uri: 'http://127.0.0.1:8080/x'}\n",
        &[],
    );
    assert!(
        out.contains(r#""GET http://10.0.1.2:8080/items/1?t=***""#),
        "{out}"
    );
    assert!(out.contains("http://127.0.0.1:8080/x"), "{out}");
    assert!(out.contains("-> 0 | 1 | 2"), "{out}");
    let out = plan_of(
        "params: {driver: stdout}\nops:\n  o: {stmt: 'select name from accounts where key = <<token:x>>'}\n",
        &[("token", "a")],
    );
    assert!(
        out.contains("select name from accounts where key = ***"),
        "{out}"
    );
    assert_eq!(replace_words("10.0.1.2:0/a0", "0"), "10.***.1.2:***/a0");
    assert_eq!(replace_words("é0é 0", "0"), "é0é ***");
}
