//! Helpers shared by integration tests and examples.

pub mod nginx;
pub mod redis;
pub mod tls;
