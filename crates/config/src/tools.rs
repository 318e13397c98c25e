//! The tools an agent can call, by name (Claude Code's names, so agent definitions and
//! allow rules written for Claude Code carry over), and what each kind of tool does, which
//! decides whether a call needs permission.
//!
//! Only names and kinds live here; the general tools are implemented in `agent`, the team
//! tools in `team`.

/// What a tool does, which decides whether it needs permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Reads files or state; always allowed (within the confinement rules).
    ReadOnly,
    /// Changes files.
    Edit,
    /// Runs commands.
    Execute,
    /// Talks to the team (messages, tasks); allowed in every mode.
    Team,
    /// Leaves plan mode; handled by the runtime.
    PlanExit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolName {
    Bash,
    Read,
    Write,
    Edit,
    Glob,
    Grep,
    SendMessage,
    TaskCreate,
    TaskGet,
    TaskList,
    TaskUpdate,
    ExitPlanMode,
    Agent,
    TeamStatus,
    MergeQueue,
}

impl ToolName {
    /// A teammate's tools.
    pub const ALL: [ToolName; 12] = [
        ToolName::Bash,
        ToolName::Read,
        ToolName::Write,
        ToolName::Edit,
        ToolName::Glob,
        ToolName::Grep,
        ToolName::SendMessage,
        ToolName::TaskCreate,
        ToolName::TaskGet,
        ToolName::TaskList,
        ToolName::TaskUpdate,
        ToolName::ExitPlanMode,
    ];

    /// The lead's tools: the team, and reading (it delegates the changes).
    pub const LEAD: [ToolName; 11] = [
        ToolName::Agent,
        ToolName::SendMessage,
        ToolName::TaskCreate,
        ToolName::TaskGet,
        ToolName::TaskList,
        ToolName::TaskUpdate,
        ToolName::TeamStatus,
        ToolName::MergeQueue,
        ToolName::Read,
        ToolName::Glob,
        ToolName::Grep,
    ];

    /// The tools that need no team.
    pub const SOLO: [ToolName; 7] = [
        ToolName::Bash,
        ToolName::Read,
        ToolName::Write,
        ToolName::Edit,
        ToolName::Glob,
        ToolName::Grep,
        ToolName::ExitPlanMode,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Bash => "Bash",
            ToolName::Read => "Read",
            ToolName::Write => "Write",
            ToolName::Edit => "Edit",
            ToolName::Glob => "Glob",
            ToolName::Grep => "Grep",
            ToolName::SendMessage => "SendMessage",
            ToolName::TaskCreate => "TaskCreate",
            ToolName::TaskGet => "TaskGet",
            ToolName::TaskList => "TaskList",
            ToolName::TaskUpdate => "TaskUpdate",
            ToolName::ExitPlanMode => "ExitPlanMode",
            ToolName::Agent => "Agent",
            ToolName::TeamStatus => "TeamStatus",
            ToolName::MergeQueue => "MergeQueue",
        }
    }

    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::ALL
            .into_iter()
            .chain(ToolName::LEAD)
            .find(|t| t.as_str() == name)
    }

    pub fn kind(self) -> ToolKind {
        match self {
            ToolName::Bash => ToolKind::Execute,
            ToolName::Write | ToolName::Edit => ToolKind::Edit,
            ToolName::Read | ToolName::Glob | ToolName::Grep => ToolKind::ReadOnly,
            ToolName::SendMessage
            | ToolName::TaskCreate
            | ToolName::TaskGet
            | ToolName::TaskList
            | ToolName::TaskUpdate
            | ToolName::Agent
            | ToolName::TeamStatus
            | ToolName::MergeQueue => ToolKind::Team,
            ToolName::ExitPlanMode => ToolKind::PlanExit,
        }
    }
}
