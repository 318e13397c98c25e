//! The shared task list (see [`list`]). This step only moves `tasks.rs` to `tasks/list.rs`;
//! the next commit splits it into model, list, claim, graph and index.

pub mod list;

pub use list::*;
