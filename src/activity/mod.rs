//! Activities: the YAML model and its validation, and bindings.

mod bindings;
mod suggest;

pub use bindings::{Binding, BindingError, BindingSet, Kind, Template, TemplateError, Value};
