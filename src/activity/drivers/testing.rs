//! What the drivers' unit tests share: a plan from YAML, a driver's refusal.

use super::{Driver, OpPlan};
use crate::activity::Loader;
use crate::sync::threads::Arc;

/// The plan of `yaml`, validated with `driver`'s declared params.
pub(crate) fn plan(driver: &dyn Driver, yaml: &str) -> Arc<OpPlan> {
    let name = driver.name();
    let mut loader = Loader::new(&[name]);
    if let Some(params) = driver.params() {
        loader = loader.driver_params(name, params);
    }
    let a = loader.from_str(yaml, "t.yaml").unwrap();
    Arc::new(OpPlan::new(&a, &Default::default()))
}

/// What `driver` says when it refuses `yaml`; panics if it accepts it.
pub(crate) fn refusal(driver: &dyn Driver, yaml: &str) -> String {
    match driver.workload(plan(driver, yaml)) {
        Ok(_) => panic!("accepted: {yaml}"),
        Err(e) => e.to_string(),
    }
}
