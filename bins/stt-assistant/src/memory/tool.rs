//! The tools the memory thread runs, by name: memory's own and the planner's, one enum. The
//! model's call names one as a string; it is read into [`Tool`] where it comes in
//! ([`Tool::named`]) and matched as the enum from there on. What each does is
//! [`super::tools`] (memory's) and [`super::plans`] (the planner's); which ones a command, a
//! dream or a dream's round is offered is said here, once.

stt_tools::tools! {
    /// A tool the memory thread runs.
    pub enum Tool {
        /// Recall what was said or decided earlier (items and the log), reinforcing the
        /// items it finds.
        Recall = "recall_memories",
        /// The latest lines of past conversations, or those matching a query.
        SearchRecent = "search_recent_conversation",
        AddIntention = "add_intention",
        CompleteIntention = "complete_intention",
        CancelIntention = "cancel_intention",
        /// Run by the loop (a dream is an LLM job), not by the memory thread.
        DreamNow = "dream_now",
        /// The memory tree, top down (only while `[memory].tree` is on).
        ExploreTree = "explore_memory_tree",
        ReadSessionLog = "read_session_log",
        ListItems = "list_items",
        CreateKnowledge = "create_knowledge",
        UpdateItem = "update_item",
        ArchiveItem = "archive_item",
        RecordEpisode = "record_episode",
        UpdateProfile = "update_profile",
        MarkLogProcessed = "mark_log_processed",
        /// A dream's note of what a round gave; it ends the round.
        WriteDreamLog = "write_dream_log",
        CreateTask = "create_task",
        BreakDownTask = "break_down_task",
        ListTasks = "list_tasks",
        GetTask = "get_task",
        GetNextActions = "get_next_actions",
        MarkPlanDone = "mark_plan_done",
        Reschedule = "reschedule",
        UpdateTaskStatus = "update_task_status",
        Prioritize = "prioritize",
    }
}

impl Tool {
    /// Memory's tools commands get (the planner's, [`Tool::PLANNER`], are offered apart).
    pub const ASSISTANT: [Tool; 7] = [
        Self::Recall,
        Self::SearchRecent,
        Self::AddIntention,
        Self::CompleteIntention,
        Self::CancelIntention,
        Self::DreamNow,
        Self::ExploreTree,
    ];

    /// The planner's tools.
    pub const PLANNER: [Tool; 9] = [
        Self::CreateTask,
        Self::BreakDownTask,
        Self::ListTasks,
        Self::GetTask,
        Self::GetNextActions,
        Self::MarkPlanDone,
        Self::Reschedule,
        Self::UpdateTaskStatus,
        Self::Prioritize,
    ];

    /// The tools a dream's round offers the model. Besides them a dream has two it runs
    /// itself ([`Tool::DREAM_OWN`]).
    pub const DREAM_ROUND: [Tool; 7] = [
        Self::ListItems,
        Self::CreateKnowledge,
        Self::UpdateItem,
        Self::ArchiveItem,
        Self::RecordEpisode,
        Self::UpdateProfile,
        Self::WriteDreamLog,
    ];

    /// The tools a dream runs itself: reading a round's conversation, marking it processed.
    pub const DREAM_OWN: [Tool; 2] = [Self::ReadSessionLog, Self::MarkLogProcessed];

    /// Every tool a command may call: memory's and the planner's.
    pub fn commands() -> impl Iterator<Item = Tool> {
        Self::ASSISTANT.into_iter().chain(Self::PLANNER)
    }

    /// Whether it is one of the planner's.
    pub fn is_plan(self) -> bool {
        Self::PLANNER.contains(&self)
    }

    /// Whether it only reads (its result is not worth keeping in the log again).
    pub fn reads_only(self) -> bool {
        match self {
            Self::Recall
            | Self::SearchRecent
            | Self::ExploreTree
            | Self::ListItems
            | Self::ReadSessionLog
            | Self::ListTasks
            | Self::GetTask
            | Self::GetNextActions => true,
            Self::AddIntention
            | Self::CompleteIntention
            | Self::CancelIntention
            | Self::DreamNow
            | Self::CreateKnowledge
            | Self::UpdateItem
            | Self::ArchiveItem
            | Self::RecordEpisode
            | Self::UpdateProfile
            | Self::MarkLogProcessed
            | Self::WriteDreamLog
            | Self::CreateTask
            | Self::BreakDownTask
            | Self::MarkPlanDone
            | Self::Reschedule
            | Self::UpdateTaskStatus
            | Self::Prioritize => false,
        }
    }

    /// Whether a successful call changes what memory holds (a dream's log note does not: it
    /// says what the round did).
    pub fn changes_memory(self) -> bool {
        !self.reads_only() && self != Self::WriteDreamLog
    }

    /// Whether a successful call saves a fact (a new one, a correction, or one found already
    /// known).
    pub fn saves_a_fact(self) -> bool {
        matches!(self, Self::CreateKnowledge | Self::UpdateItem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_named_once_and_read_back_from_its_name() {
        let mut names: Vec<&str> = Tool::ALL.iter().map(|t| t.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Tool::ALL.len());
        for tool in Tool::ALL {
            assert_eq!(Tool::named(tool.name()), Some(*tool));
        }
        assert_eq!(Tool::named("set_timer"), None);
    }

    #[test]
    fn every_tool_is_in_a_set_and_the_sets_do_not_overlap() {
        let sets = [&Tool::ASSISTANT[..], &Tool::PLANNER, &Tool::DREAM_ROUND, &Tool::DREAM_OWN];
        for tool in Tool::ALL {
            let holding = sets.iter().filter(|set| set.contains(tool)).count();
            assert_eq!(holding, 1, "{tool} is in {holding} sets");
        }
    }
}
