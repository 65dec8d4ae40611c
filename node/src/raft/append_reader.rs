//! `AppendReader`: reads an append in one pass when it is exactly as this node's
//! leaders write it, keeping each entry's bytes.
//!
//! A follower keeps the JSON each entry came as (see [`LogEntry`]). Through serde
//! alone that takes two passes over the entries: one to find where each begins and
//! ends (`RawValue`), one to decode it. This reader takes the append's frame (its
//! vote and log ids) byte by byte in the one form [`append_entries_json`] writes, the
//! compact form `serde_json` writes, and decodes each entry in place, noting where
//! it ended. Anything else — a space, another order of fields, an unknown field, a
//! number too large — it declines, and the caller decodes the append through serde,
//! which accepts every form and names what is wrong with a bad one.
//!
//! *Invariant:* what it reads, it reads as `serde_json` would.
//!
//! [`LogEntry`]: super::LogEntry
//! [`append_entries_json`]: super::wire::append_entries_json

use openraft::raft::AppendEntriesRequest;
use openraft::type_config::alias::{LeaderIdOf, LogIdOf, VoteOf};

use super::log_entry::LogEntry;
use super::type_config::FleetRaft;

/// A position in an append's JSON.
pub(crate) struct AppendReader<'a> {
    json: &'a [u8],
    at: usize,
}

impl<'a> AppendReader<'a> {
    /// The append `json` holds, or `None` when it is not in the compact form (or not
    /// an append at all: serde then says why).
    pub(crate) fn read(json: &'a [u8]) -> Option<AppendEntriesRequest<FleetRaft>> {
        let mut reader = Self { json, at: 0 };
        reader.expect(b"{\"vote\":{\"leader_id\":")?;
        let leader_id = reader.leader_id()?;
        reader.expect(b",\"committed\":")?;
        let committed = reader.boolean()?;
        reader.expect(b"},\"prev_log_id\":")?;
        let prev_log_id = reader.log_id()?;
        reader.expect(b",\"entries\":[")?;
        let entries = reader.entries()?;
        reader.expect(b",\"leader_commit\":")?;
        let leader_commit = reader.log_id()?;
        reader.expect(b"}")?;
        (reader.at == json.len()).then_some(AppendEntriesRequest {
            vote: VoteOf::<FleetRaft> {
                leader_id,
                committed,
            },
            prev_log_id,
            entries,
            leader_commit,
        })
    }

    /// Steps over `literal`, if it comes next.
    fn expect(&mut self, literal: &[u8]) -> Option<()> {
        let json = self.json;
        if !json.get(self.at..)?.starts_with(literal) {
            return None;
        }
        self.at += literal.len();
        Some(())
    }

    /// A number as `serde_json` writes a `u64`: digits, no leading zero.
    fn number(&mut self) -> Option<u64> {
        let json = self.json;
        let digits = json[self.at..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        let text = &json[self.at..self.at + digits];
        if digits == 0 || (digits > 1 && text[0] == b'0') {
            return None;
        }
        let value = text.iter().try_fold(0u64, |value, digit| {
            value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
        })?;
        self.at += digits;
        Some(value)
    }

    fn boolean(&mut self) -> Option<bool> {
        if self.expect(b"true").is_some() {
            return Some(true);
        }
        self.expect(b"false").map(|()| false)
    }

    /// `{"term":T,"node_id":N}`.
    fn leader_id(&mut self) -> Option<LeaderIdOf<FleetRaft>> {
        self.expect(b"{\"term\":")?;
        let term = self.number()?;
        self.expect(b",\"node_id\":")?;
        let node_id = self.number()?;
        self.expect(b"}")?;
        Some(LeaderIdOf::<FleetRaft> { term, node_id })
    }

    /// `null`, or `{"leader_id":{…},"index":I}`.
    fn log_id(&mut self) -> Option<Option<LogIdOf<FleetRaft>>> {
        if self.expect(b"null").is_some() {
            return Some(None);
        }
        self.expect(b"{\"leader_id\":")?;
        let leader_id = self.leader_id()?;
        self.expect(b",\"index\":")?;
        let index = self.number()?;
        self.expect(b"}")?;
        Some(Some(LogIdOf::<FleetRaft>::new(leader_id, index)))
    }

    /// The entries after `[`, through the closing `]`, each decoded where it stands
    /// and carrying the bytes it took.
    fn entries(&mut self) -> Option<Vec<LogEntry>> {
        let mut entries = Vec::new();
        if self.expect(b"]").is_some() {
            return Some(entries);
        }
        loop {
            // An entry is an object; anything else (a space first) is for serde.
            let json = self.json;
            if json.get(self.at) != Some(&b'{') {
                return None;
            }
            let rest = &json[self.at..];
            let mut stream = serde_json::Deserializer::from_slice(rest).into_iter::<LogEntry>();
            let entry = stream.next()?.ok()?;
            let length = stream.byte_offset();
            entries.push(entry.carrying(&rest[..length]));
            self.at += length;
            if self.expect(b"]").is_some() {
                return Some(entries);
            }
            self.expect(b",")?;
        }
    }
}
