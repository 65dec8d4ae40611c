//! `LogEntry`: a Raft log entry that carries its JSON once it has been encoded.
//!
//! A leader of three nodes writes each entry to its own log and sends it to two
//! followers: three encodings of the same bytes. Instead, the log store encodes a small
//! entry once, when it is appended (`LogEntry::encode_within`), and the entry carries
//! that JSON from then on, shared by its clones (the log tail's copy, the copies that
//! replication reads): the log writer stores those bytes, and an append to a follower
//! copies them in place of the entry's encoding (`wire::append_entries_json`). An
//! entry read back from RocksDB carries the bytes it was read from, and one that a
//! follower receives the bytes it came as (`wire::decode_append_entries`), which the
//! follower's log stores.
//!
//! Clones share the payload as well: the log tail's copy and each read of it (for an
//! append, or for the state machine) count a reference instead of copying the command
//! and its strings. `into_payload` copies it only while a clone still holds it.
//!
//! The encoding is never part of the entry's own JSON (the field is not serialized),
//! so an entry encodes and decodes as openraft's own `Entry` does, and the log on disk
//! and the messages between nodes are what they were.
//!
//! *Invariant:* an entry's encoding, when it has one, is JSON that decodes to this
//! entry. Its fields are private and `set_log_id` drops the encoding, so nothing
//! changes an entry under it.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use openraft::entry::{RaftEntry, RaftPayload};
use openraft::type_config::alias::{CommittedLeaderIdOf, EntryPayloadOf, LogIdOf};
use openraft::{Membership, RaftTypeConfig};
use serde::{Deserialize, Serialize};

use super::FleetRaft;
use super::capped_buffer::CappedBuffer;

type LogId = LogIdOf<FleetRaft>;
type Payload = EntryPayloadOf<FleetRaft>;

/// A Raft log entry: its log id, its payload and, once encoded, its JSON.
#[derive(Clone, Serialize, Deserialize)]
pub struct LogEntry {
    log_id: LogId,
    /// Shared by the entry's clones, and encoded and decoded as the payload itself.
    payload: Arc<Payload>,
    #[serde(skip)]
    encoded: Option<Bytes>,
}

impl LogEntry {
    /// The entry's log id.
    pub fn log_id(&self) -> LogId {
        self.log_id
    }

    /// The entry's payload.
    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// The entry's payload, taken out of it (a copy while a clone of the entry holds
    /// it too).
    pub fn into_payload(self) -> Payload {
        Arc::unwrap_or_clone(self.payload)
    }

    /// The entry's JSON, if it was encoded (or read from its JSON) before.
    pub fn encoded(&self) -> Option<&Bytes> {
        self.encoded.as_ref()
    }

    /// Encodes the entry, unless its JSON takes more than `cap` bytes (or it cannot be
    /// encoded: whoever encodes it next says why), and keeps that JSON; the number of
    /// bytes it takes, if it fits. An entry encoded before is not encoded again.
    pub(crate) fn encode_within(&mut self, cap: usize) -> Option<usize> {
        if let Some(encoded) = &self.encoded {
            return (encoded.len() <= cap).then_some(encoded.len());
        }
        let (buffer, result) = CappedBuffer::json(self, cap);
        result.ok()?;
        let length = buffer.bytes.len();
        self.encoded = Some(Bytes::from(buffer.bytes));
        Some(length)
    }

    /// The entry that `json` decodes to, carrying `json` as its encoding.
    pub(crate) fn decode(json: &[u8]) -> serde_json::Result<Self> {
        let entry: Self = serde_json::from_slice(json)?;
        Ok(entry.carrying(json))
    }

    /// This entry, just decoded from `json`, carrying `json` as its encoding.
    pub(crate) fn carrying(mut self, json: &[u8]) -> Self {
        self.encoded = Some(Bytes::copy_from_slice(json));
        self
    }
}

/// Encodes `entries` in order while their JSON fits in `budget` bytes together, each
/// keeping its own; whether every one of them was encoded.
pub(crate) fn encode_each_within(entries: &mut [LogEntry], budget: usize) -> bool {
    let mut left = budget;
    entries.iter_mut().all(|entry| {
        entry
            .encode_within(left)
            .map(|length| left -= length)
            .is_some()
    })
}

impl RaftEntry for LogEntry {
    type CommittedLeaderId = CommittedLeaderIdOf<FleetRaft>;
    type Payload = Payload;

    fn new(log_id: LogId, payload: Payload) -> Self {
        Self {
            log_id,
            payload: Arc::new(payload),
            encoded: None,
        }
    }

    fn log_id_parts(&self) -> (&Self::CommittedLeaderId, u64) {
        (&self.log_id.leader_id, self.log_id.index)
    }

    fn set_log_id(&mut self, new: LogId) {
        self.log_id = new;
        self.encoded = None;
    }

    fn get_membership(
        &self,
    ) -> Option<
        Membership<<FleetRaft as RaftTypeConfig>::NodeId, <FleetRaft as RaftTypeConfig>::Node>,
    > {
        self.payload.get_membership()
    }
}

/// Two entries are equal when their log ids and payloads are, encoded or not.
impl PartialEq for LogEntry {
    fn eq(&self, other: &Self) -> bool {
        self.log_id == other.log_id && self.payload == other.payload
    }
}

impl fmt::Debug for LogEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogEntry")
            .field("log_id", &self.log_id)
            .field("payload", &self.payload)
            .field("encoded_bytes", &self.encoded.as_ref().map(Bytes::len))
            .finish()
    }
}

/// As openraft shows its own entries: the log id, then the payload.
impl fmt::Display for LogEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.log_id, self.payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::vote::RaftLeaderIdExt;

    use crate::state::{Actor, Command, Request};

    fn log_id(term: u64, index: u64) -> LogId {
        LogId::new(
            <FleetRaft as RaftTypeConfig>::LeaderId::new_committed(term, 1),
            index,
        )
    }

    fn entry(index: u64, markdown_bytes: usize) -> LogEntry {
        let command = Command {
            at_ms: 1,
            actor: Actor::Operator,
            request: Request::PublishCapabilities {
                markdown: "m".repeat(markdown_bytes),
            },
        };
        LogEntry::new_normal(log_id(1, index), Box::new(command))
    }

    #[test]
    fn an_entry_encodes_as_openraft_own_entry_does_and_keeps_that_json() {
        let mut entry = entry(3, 20);
        let theirs = openraft::Entry::<CommittedLeaderIdOf<FleetRaft>, Payload>::new(
            entry.log_id(),
            entry.payload().clone(),
        );
        let expected = serde_json::to_vec(&theirs).unwrap();
        assert_eq!(serde_json::to_vec(&entry).unwrap(), expected);

        assert_eq!(entry.encode_within(1024), Some(expected.len()));
        assert_eq!(entry.encoded().map(|b| b.to_vec()), Some(expected.clone()));
        // The encoding is never part of the entry's JSON, and clones share it.
        assert_eq!(serde_json::to_vec(&entry).unwrap(), expected);
        assert_eq!(entry.clone().encoded(), entry.encoded());
        assert_eq!(
            serde_json::from_slice::<LogEntry>(&expected).unwrap(),
            entry
        );
    }

    #[test]
    fn clones_share_the_payload_and_taking_it_leaves_the_others_theirs() {
        let original = entry(1, 10);
        let clone = original.clone();
        assert!(Arc::ptr_eq(&original.payload, &clone.payload));
        let expected = original.payload().clone();
        assert_eq!(clone.into_payload(), expected);
        assert_eq!(Arc::strong_count(&original.payload), 1);
        assert_eq!(original.into_payload(), expected);
    }

    #[test]
    fn an_entry_over_the_cap_is_left_unencoded() {
        let mut large = entry(1, 2_000);
        assert_eq!(large.encode_within(1_000), None);
        assert!(large.encoded().is_none());
    }

    #[test]
    fn a_new_log_id_drops_the_encoding() {
        let mut entry = entry(1, 10);
        entry.encode_within(1024).unwrap();
        entry.set_log_id(log_id(2, 1));
        assert!(
            entry.encoded().is_none(),
            "stale JSON kept under a new log id"
        );
        assert_eq!(entry.log_id(), log_id(2, 1));
    }

    #[test]
    fn entries_are_encoded_in_order_while_the_budget_lasts() {
        let mut entries = vec![entry(1, 100), entry(2, 100), entry(3, 100)];
        let one = serde_json::to_vec(&entries[0]).unwrap().len();
        assert!(!encode_each_within(&mut entries, 2 * one + 1));
        let encoded: Vec<bool> = entries.iter().map(|e| e.encoded().is_some()).collect();
        assert_eq!(encoded, [true, true, false]);
        assert!(encode_each_within(&mut entries, usize::MAX));
        // Entries that carry their JSON already (as a follower's do, whatever their
        // size) are within a budget only if that JSON is.
        assert!(!encode_each_within(&mut entries, 3 * one - 1));
        assert!(encode_each_within(&mut entries, 3 * one));
        assert!(encode_each_within(&mut [], 0), "nothing to encode");
    }

    #[test]
    fn a_decoded_entry_carries_the_json_it_came_from() {
        let json = serde_json::to_vec(&entry(7, 10)).unwrap();
        let decoded = LogEntry::decode(&json).unwrap();
        assert_eq!(decoded, entry(7, 10));
        assert_eq!(decoded.encoded().map(|b| b.to_vec()), Some(json));
    }
}
