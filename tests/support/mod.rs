//! Helpers shared by integration tests and examples.

pub mod bin;
#[cfg(feature = "redis")]
pub mod coord;
pub mod drive;
pub mod nginx;
pub mod pg_run;
pub mod postgres;
pub mod proxy;
pub mod recorder;
pub mod redis;
pub mod redis_run;
pub mod tls;
