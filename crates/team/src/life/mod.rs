//! A team's life once its agents run: who is alive and what each does ([`status`], with
//! the first-run [`dialogs`] that can hold a Claude Code teammate), acting on deaths
//! ([`supervisor`]), the shutdown ladder ([`shutdown`]), bringing a stopped team back
//! ([`resume`]) and deleting a team ([`teardown`]).

pub mod dialogs;
pub mod resume;
pub mod shutdown;
pub mod status;
pub mod supervisor;
pub mod teardown;
