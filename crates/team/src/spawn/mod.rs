//! Starting a team's agents in tmux: what a teammate inherits from its lead, and the lead's
//! own command line ([`inherit`]); launching teammates, and the lead with the first one,
//! into panes ([`launch`]); the record each pane leaves for a resume ([`launch_record`]);
//! the team window ([`window`]), where its panes go ([`layout`]) and showing it to a person
//! ([`show`]); and what an agent in a team is told ([`prompt`]).

pub mod inherit;
pub mod launch;
pub mod launch_record;
pub mod layout;
pub mod prompt;
pub mod remote;
pub mod show;
pub mod window;
