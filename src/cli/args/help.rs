//! The help texts: each command's examples, shown after its options.

pub(super) const TOP_EXAMPLES: &str = "\
Examples:
  paceline run workload.yaml                  run the activities in a file
  paceline run workload.yaml rate=5000 threads=8
  paceline findmax workload.yaml --step 5s    the highest rate the system sustains
  paceline check workload.yaml                validate a file without running it
  paceline list                               list the drivers and their ops
  paceline calibrate                          measure this machine's timers
  paceline report run.hlog -o report.html     an HTML report from a run's files
  paceline compare base.json run.json         two runs side by side, a regression gate

Exit codes: 0 success, 1 run failed, 2 bad input, 3 a threshold failed.";

pub(super) const RUN_EXAMPLES: &str = "\
Examples:
  paceline run workload.yaml
  paceline run workload.yaml cycles=1M rate=10K,1.0 threads=4
  paceline run nb5-workload.yaml default driver=stdout    a scenario (NB5 form)
  paceline run nb5-workload.yaml default.rampup rampup-cycles=10   one step of it
  paceline run driver=diag cycles=100000 rate=10000
  paceline run workload.yaml --report-interval 1s --summary-json out.json
  paceline run workload.yaml --csv intervals.csv --hdr-log latencies.hlog
  paceline run workload.yaml --html report.html   plots and summary in one page
  paceline run workload.yaml --control 127.0.0.1:7878
      then: curl -X PUT -d '20000 over 30s' localhost:7878/activities/a/rate
  paceline run workload.yaml --metrics 9464       Prometheus scrapes localhost:9464/metrics
  paceline run driver=diag rate=1000 duration=3s  ends by itself after 3 s
  paceline run workload.yaml --duration 10m --threshold 'response.p99<50ms' \\
      --threshold 'errors<1%' --junit junit.xml   a CI gate: exit 3 when one fails

Parameters (NAME=VALUE) override the file's params in the order given.";

pub(super) const FINDMAX_EXAMPLES: &str = "\
Examples:
  paceline findmax workload.yaml                      10s steps from the file's rate
  paceline findmax workload.yaml --slo-p99 50ms       a step also fails over 50ms p99
  paceline findmax workload.yaml --html steps.html    the steps plotted on one page
  paceline findmax driver=diag latency=2ms threads=2 rate=250 --step 2s --settle 500ms
  paceline findmax workload.yaml errors=count --max-error-rate 0.001 --summary-json max.json

A step passes when the achieved rate is within 1 % of its target, response p99 is
under --slo-p99 (if given) and at most --max-error-rate of its ops fail. The result
names what limited it: the system, the SLO, or the generator (then the system's own
limit is higher than this run can show).";

pub(super) const CHECK_EXAMPLES: &str = "\
Examples:
  paceline check workload.yaml
  paceline check workload.yaml cycles=1M      check with overrides applied

Exit code 0 when the file is valid, 2 with every problem listed when it is not.";

pub(super) const REPORT_EXAMPLES: &str = "\
Examples:
  paceline run workload.yaml --hdr-log run.hlog --summary-json run.json
  paceline report run.hlog --summary-json run.json -o report.html
  paceline report pod-0.hlog pod-1.hlog pod-2.hlog -o fleet.html   one report of 3 processes
  paceline report out/ -o fleet.html          every *.hlog in out/, merged

Several logs merge into one report: histograms of the same tag added, intervals
aligned by wall time (each log's StartTime) into windows of the report interval,
a window that not every log covers marked partial. Exit code 0 when the report
is written, 2 when a file cannot be read or the logs cannot be merged (the
message names the file, and the line).";

pub(super) const COMPARE_EXAMPLES: &str = "\
Examples:
  paceline compare baseline.json run.json
  paceline compare baseline.json run.json --fail-if 'response.p99>+10%' --fail-if 'rate<-5%'
  paceline compare base.json run.json --hdr-logs base.hlog run.hlog --fail-if 'response.p99>+10%'

With both runs' HDR logs, every latency row says whether its change is significant
(95% order-statistic intervals, corrected for drift between intervals) and a
latency gate trips only on a significant change. Exit code 0, 3 when a gate trips,
2 when a file cannot be read or a gate is malformed.";

pub(super) const LIST_EXAMPLES: &str = "\
Examples:
  paceline list";

pub(super) const CALIBRATE_EXAMPLES: &str = "\
Examples:
  paceline calibrate

Takes about two seconds: clock read cost, sleep overshoot, spin-sleep accuracy,
the finest spacing the pacer holds here, and a recommended waiting strategy.";
