//! `FleetRaft`: the openraft type configuration of a fleet.
//!
//! A log entry's application data is a state [`Command`] (which already carries the
//! leader's timestamp and the actor), boxed: openraft moves a proposal through its
//! core by value inside messages as large as their largest kind, and a pointer keeps
//! those small where the command itself is over 200 bytes. It encodes as the command
//! itself. The response is a [`CommandOutcome`]. Nodes are identified by a `u64`
//! derived from their name (see [`node_id`]) and described by a [`Peer`] (name and
//! addresses). A log entry is a [`LogEntry`], which carries its JSON once encoded.

use serde::{Deserialize, Serialize};

use crate::state::{Command, Request, Response, RuleViolation};

use super::log_entry::LogEntry;
use super::peer::Peer;

openraft::declare_raft_types!(
    /// The fleet's Raft types.
    pub FleetRaft:
        D = Box<Command>,
        R = CommandOutcome,
        NodeId = u64,
        Node = Peer,
        Entry = LogEntry,
);

/// What applying one command returned to its proposer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandOutcome {
    /// The response, or the rule the command broke; `None` for entries that carry no
    /// command (blank and membership entries).
    pub result: Option<Result<Response, RuleViolation>>,
}

/// openraft requires application data to be `Display` (it names entries in its logs).
/// A command shows its time, actor and request kind, never its payload: payloads can
/// be large (artifacts) and need not end up in log files.
impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at {} ms by {}",
            request_kind(&self.request),
            self.at_ms,
            self.actor
        )
    }
}

/// The request's variant name; exhaustive, so a new request kind must be named here.
fn request_kind(request: &Request) -> &'static str {
    match request {
        Request::Bootstrap(_) => "Bootstrap",
        Request::AddNode { .. } => "AddNode",
        Request::RemoveNode { .. } => "RemoveNode",
        Request::SetSpecialties { .. } => "SetSpecialties",
        Request::ReportHealth { .. } => "ReportHealth",
        Request::Tick => "Tick",
        Request::OpenDeliberation(_) => "OpenDeliberation",
        Request::Submit { .. } => "Submit",
        Request::Override { .. } => "Override",
        Request::NotesWritten { .. } => "NotesWritten",
        Request::RecordDelivery { .. } => "RecordDelivery",
        Request::PublishSession { .. } => "PublishSession",
        Request::SendMessage { .. } => "SendMessage",
        Request::ReportMessage { .. } => "ReportMessage",
        Request::AppendEvent(_) => "AppendEvent",
        Request::AckEvent { .. } => "AckEvent",
        Request::PutArtifact { .. } => "PutArtifact",
        Request::PostBulletin { .. } => "PostBulletin",
        Request::AckBulletin { .. } => "AckBulletin",
        Request::ArchiveBulletin { .. } => "ArchiveBulletin",
        Request::PublishCapabilities { .. } => "PublishCapabilities",
        Request::Probe => "Probe",
        Request::RecordDrill(_) => "RecordDrill",
    }
}

/// The Raft id of the node called `name`: FNV-1a (64 bit) of the name, so a node's
/// name is its only identity and every node derives the same id without coordination.
pub fn node_id(name: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    name.bytes().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct_for_the_fleet() {
        let ids = ["beast", "5070", "mac"].map(node_id);
        assert_eq!(node_id("beast"), ids[0]);
        assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
        // Pinned so a change of the function, which would split a fleet, fails here.
        assert_eq!(node_id(""), 0xcbf2_9ce4_8422_2325);
    }

    #[test]
    fn a_boxed_command_is_stored_and_sent_as_the_command_itself() {
        use openraft::type_config::alias::EntryPayloadOf;

        use crate::state::Actor;

        // A normal entry's payload as logs written and messages sent before the box
        // carry it; pinned so that the log on disk keeps its format.
        let json = r#"{"Normal":{"at_ms":5,"actor":"Operator","request":"Probe"}}"#;
        let payload = EntryPayloadOf::<FleetRaft>::Normal(Box::new(Command {
            at_ms: 5,
            actor: Actor::Operator,
            request: Request::Probe,
        }));
        assert_eq!(serde_json::to_string(&payload).unwrap(), json);
        assert_eq!(
            serde_json::from_str::<EntryPayloadOf<FleetRaft>>(json).unwrap(),
            payload
        );
    }
}
