//! Encodings of Raft messages beyond openraft's own serde forms: an append that
//! reuses its entries' JSON, sent and received, and the snapshot sent whole to a
//! follower behind the purged log.

use std::io::Write;

use openraft::raft::AppendEntriesRequest;
use openraft::type_config::alias::{LeaderIdOf, LogIdOf, SnapshotMetaOf, SnapshotOf, VoteOf};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::append_reader::AppendReader;
use super::capped_buffer::CappedBuffer;
use super::log_entry::LogEntry;
use super::type_config::FleetRaft;

/// `rpc` as JSON in a buffer of at most `cap` bytes, and whether that worked (as
/// [`CappedBuffer::json`] says). The bytes are those `serde_json` writes for the
/// request, field by field in their order, and they decode as such, but each entry
/// that carries its JSON ([`LogEntry::encoded`]) is copied rather than encoded again.
///
/// [`LogEntry::encoded`]: super::log_entry::LogEntry::encoded
pub(crate) fn append_entries_json(
    rpc: &AppendEntriesRequest<FleetRaft>,
    cap: usize,
) -> (CappedBuffer, serde_json::Result<()>) {
    let mut buffer = CappedBuffer::new(cap);
    let result = write_append_entries(rpc, &mut buffer).map_err(serde_json::Error::io);
    (buffer, result)
}

fn write_append_entries(
    rpc: &AppendEntriesRequest<FleetRaft>,
    out: &mut CappedBuffer,
) -> std::io::Result<()> {
    write_vote(out, &rpc.vote)?;
    out.write_all(b",\"prev_log_id\":")?;
    write_log_id(out, rpc.prev_log_id.as_ref())?;
    out.write_all(b",\"entries\":[")?;
    for (position, entry) in rpc.entries.iter().enumerate() {
        if position > 0 {
            out.write_all(b",")?;
        }
        match entry.encoded() {
            Some(json) => out.write_all(json)?,
            None => serde_json::to_writer(&mut *out, entry)?,
        }
    }
    out.write_all(b"],\"leader_commit\":")?;
    write_log_id(out, rpc.leader_commit.as_ref())?;
    out.write_all(b"}")
}

// An append's frame is written by hand, as serde writes it: through serde, its two
// log ids and its vote cost a leader more than all else that encoding an append does,
// a dozen tokens each, each key checked for characters to escape. The field names are
// checked by the compiler, and the bytes by the tests below against `serde_json`'s.

/// The opening of an append and its vote:
/// `{"vote":{"leader_id":{"term":T,"node_id":N},"committed":B}`.
fn write_vote(out: &mut CappedBuffer, vote: &VoteOf<FleetRaft>) -> std::io::Result<()> {
    out.write_all(b"{\"vote\":{\"leader_id\":")?;
    write_leader_id(out, &vote.leader_id)?;
    out.write_all(if vote.committed {
        b",\"committed\":true}"
    } else {
        b",\"committed\":false}"
    })
}

/// `{"leader_id":{"term":T,"node_id":N},"index":I}`, or `null`.
fn write_log_id(
    out: &mut CappedBuffer,
    log_id: Option<&LogIdOf<FleetRaft>>,
) -> std::io::Result<()> {
    let Some(log_id) = log_id else {
        return out.write_all(b"null");
    };
    out.write_all(b"{\"leader_id\":")?;
    write_leader_id(out, &log_id.leader_id)?;
    out.write_all(b",\"index\":")?;
    out.write_all(itoa::Buffer::new().format(log_id.index).as_bytes())?;
    out.write_all(b"}")
}

/// `{"term":T,"node_id":N}`.
fn write_leader_id(out: &mut CappedBuffer, leader: &LeaderIdOf<FleetRaft>) -> std::io::Result<()> {
    let mut number = itoa::Buffer::new();
    out.write_all(b"{\"term\":")?;
    out.write_all(number.format(leader.term).as_bytes())?;
    out.write_all(b",\"node_id\":")?;
    out.write_all(number.format(leader.node_id).as_bytes())?;
    out.write_all(b"}")
}

/// The append that `json` holds, as `serde_json` decodes `AppendEntriesRequest`, but
/// with each entry carrying the JSON it came as ([`LogEntry::decode`]), so that a
/// follower stores those bytes rather than encoding the entry again: in one pass when
/// the append is in the compact form a leader writes ([`AppendReader`]), else through
/// serde.
pub(crate) fn decode_append_entries(
    json: &[u8],
) -> serde_json::Result<AppendEntriesRequest<FleetRaft>> {
    match AppendReader::read(json) {
        Some(append) => Ok(append),
        None => decode_append_entries_by_serde(json),
    }
}

/// The append that `json` holds, its entries first left as their JSON, then each
/// decoded from it: any form `serde_json` accepts, and its error for a bad one.
fn decode_append_entries_by_serde(
    json: &[u8],
) -> serde_json::Result<AppendEntriesRequest<FleetRaft>> {
    /// `AppendEntriesRequest`'s fields, its entries left as their JSON.
    #[derive(Deserialize)]
    struct Append<'a> {
        vote: VoteOf<FleetRaft>,
        prev_log_id: Option<LogIdOf<FleetRaft>>,
        #[serde(borrow)]
        entries: Vec<&'a RawValue>,
        leader_commit: Option<LogIdOf<FleetRaft>>,
    }
    let append: Append<'_> = serde_json::from_slice(json)?;
    let entries = append
        .entries
        .into_iter()
        .map(|entry| LogEntry::decode(entry.get().as_bytes()))
        .collect::<serde_json::Result<_>>()?;
    Ok(AppendEntriesRequest {
        vote: append.vote,
        prev_log_id: append.prev_log_id,
        entries,
        leader_commit: append.leader_commit,
    })
}

/// A snapshot's bytes, as the state machine builds and installs it.
pub type SnapshotData = Vec<u8>;

/// A whole snapshot with the sender's vote, for `InstallSnapshot`.
#[derive(Serialize, Deserialize)]
pub struct SnapshotEnvelope {
    pub vote: VoteOf<FleetRaft>,
    pub meta: SnapshotMetaOf<FleetRaft>,
    #[serde(with = "crate::state::artifacts::base64_bytes")]
    pub data: Vec<u8>,
}

impl SnapshotEnvelope {
    /// Wraps a snapshot for sending.
    pub fn new(vote: VoteOf<FleetRaft>, snapshot: SnapshotOf<FleetRaft, SnapshotData>) -> Self {
        Self {
            vote,
            meta: snapshot.meta,
            data: snapshot.snapshot,
        }
    }

    /// Unwraps a received snapshot for installing.
    pub fn into_parts(self) -> (VoteOf<FleetRaft>, SnapshotOf<FleetRaft, SnapshotData>) {
        let snapshot = openraft::Snapshot {
            meta: self.meta,
            snapshot: self.data,
        };
        (self.vote, snapshot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::RaftTypeConfig;
    use openraft::entry::RaftEntry;
    use openraft::impls::Vote;
    use openraft::impls::leader_id_adv::LeaderId;
    use openraft::type_config::alias::{EntryOf, LogIdOf};
    use openraft::vote::RaftLeaderIdExt;

    use crate::raft::log_entry::encode_each_within;
    use crate::state::{Actor, Command, Request};

    fn log_id(index: u64) -> LogIdOf<FleetRaft> {
        let leader = <FleetRaft as RaftTypeConfig>::LeaderId::new_committed(3, 1);
        LogIdOf::<FleetRaft>::new(leader, index)
    }

    fn entries(first: u64, count: u64) -> Vec<EntryOf<FleetRaft>> {
        (first..first + count)
            .map(|index| {
                let command = Command {
                    at_ms: index,
                    actor: Actor::Operator,
                    request: Request::PublishCapabilities {
                        markdown: format!("\"quoted\" capability {index}\n"),
                    },
                };
                EntryOf::<FleetRaft>::new_normal(log_id(index), Box::new(command))
            })
            .collect()
    }

    /// A vote granted by a quorum to `node_id` in `term`.
    fn committed_vote(term: u64, node_id: u64) -> VoteOf<FleetRaft> {
        Vote {
            leader_id: LeaderId { term, node_id },
            committed: true,
        }
    }

    fn request(entries: Vec<EntryOf<FleetRaft>>) -> AppendEntriesRequest<FleetRaft> {
        let prev_log_id = entries
            .first()
            .and_then(|e| e.log_id().index.checked_sub(1));
        AppendEntriesRequest {
            vote: VoteOf::<FleetRaft>::new(3, 1),
            prev_log_id: prev_log_id.map(log_id),
            entries,
            leader_commit: prev_log_id.map(log_id),
        }
    }

    fn spliced(rpc: &AppendEntriesRequest<FleetRaft>) -> Vec<u8> {
        let (buffer, result) = append_entries_json(rpc, usize::MAX);
        result.unwrap();
        buffer.bytes
    }

    #[test]
    fn an_append_is_the_json_serde_writes_whether_its_entries_carry_theirs_or_not() {
        let heartbeat = request(Vec::new());
        assert_eq!(spliced(&heartbeat), serde_json::to_vec(&heartbeat).unwrap());

        let mut carried = entries(5, 3);
        assert!(encode_each_within(&mut carried, usize::MAX));
        let mut some_carried = entries(5, 3);
        some_carried[1].encode_within(usize::MAX).unwrap();
        // The frame's numbers at their widest, and a vote granted by a quorum.
        let mut widest = request(entries(u64::MAX - 1, 1));
        widest.vote = committed_vote(u64::MAX, u64::MAX);
        widest.leader_commit = Some(LogIdOf::<FleetRaft>::new(widest.vote.leader_id, u64::MAX));
        assert_eq!(spliced(&widest), serde_json::to_vec(&widest).unwrap());
        for rpc in [
            request(entries(5, 3)),
            request(carried),
            request(some_carried),
        ] {
            let expected = serde_json::to_vec(&rpc).unwrap();
            assert_eq!(spliced(&rpc), expected);
            let decoded: AppendEntriesRequest<FleetRaft> =
                serde_json::from_slice(&spliced(&rpc)).unwrap();
            assert_eq!(decoded.entries, rpc.entries);
        }
    }

    #[test]
    fn a_received_append_decodes_as_serde_does_its_entries_carrying_their_json() {
        for rpc in [request(Vec::new()), request(entries(9, 3))] {
            let json = serde_json::to_vec(&rpc).unwrap();
            assert_decodes_as_serde_does(&json);
            // And what a follower forwards, were it to lead, is the same message, each
            // entry's bytes as they came.
            assert_eq!(spliced(&decode_append_entries(&json).unwrap()), json);
        }
    }

    /// `json` decoded by `decode_append_entries` equals serde's decoding of it, and
    /// each entry carries the JSON serde writes for it.
    fn assert_decodes_as_serde_does(json: &[u8]) {
        let decoded = decode_append_entries(json).unwrap();
        let expected: AppendEntriesRequest<FleetRaft> = serde_json::from_slice(json).unwrap();
        assert_eq!(
            (decoded.vote, decoded.prev_log_id, decoded.leader_commit),
            (expected.vote, expected.prev_log_id, expected.leader_commit)
        );
        assert_eq!(decoded.entries, expected.entries);
        for entry in &decoded.entries {
            let carried = entry.encoded().expect("an entry received carries its JSON");
            let value: serde_json::Value = serde_json::from_slice(carried).unwrap();
            assert_eq!(value, serde_json::to_value(entry).unwrap());
        }
    }

    #[test]
    fn an_append_as_a_leader_writes_it_is_read_in_one_pass_as_serde_reads_it() {
        let mut widest = request(entries(u64::MAX - 2, 2));
        widest.vote = committed_vote(u64::MAX, 0);
        let mut unicode = entries(1, 1);
        unicode[0] = EntryOf::<FleetRaft>::new_normal(
            log_id(1),
            Box::new(Command {
                at_ms: 0,
                actor: Actor::Operator,
                request: Request::PublishCapabilities {
                    markdown: "\\ ] } , \u{1F600} \u{7} é".into(),
                },
            }),
        );
        for rpc in [
            request(Vec::new()),
            request(entries(1, 1)),
            request(entries(7, 5)),
            request(unicode),
            widest,
        ] {
            let json = spliced(&rpc);
            let read = AppendReader::read(&json).expect("a leader's form is read in one pass");
            assert_eq!(read.entries, rpc.entries);
            for (entry, sent) in read.entries.iter().zip(&rpc.entries) {
                let carried = entry.encoded().expect("an entry read carries its JSON");
                assert_eq!(carried.to_vec(), serde_json::to_vec(sent).unwrap());
            }
            assert_decodes_as_serde_does(&json);
            // Its frame, and so the message, is what was sent.
            assert_eq!(spliced(&read), json);
        }
    }

    #[test]
    fn an_append_in_any_other_form_is_left_to_serde_and_decodes_the_same() {
        let rpc = request(entries(3, 2));
        let compact = String::from_utf8(spliced(&rpc)).unwrap();
        let pretty = serde_json::to_string_pretty(&rpc).unwrap();
        let mut reordered = serde_json::to_value(&rpc).unwrap();
        let reordered = format!(
            r#"{{"leader_commit":{},"entries":{},"prev_log_id":{},"vote":{}}}"#,
            reordered["leader_commit"].take(),
            reordered["entries"].take(),
            reordered["prev_log_id"].take(),
            reordered["vote"].take(),
        );
        let unknown_field = compact.replacen('{', r#"{"extra":1,"#, 1);
        let spaced_entry = compact.replacen(r#""entries":["#, r#""entries":[ "#, 1);
        let trailing_space = format!("{compact} ");
        for other in [
            &pretty,
            &reordered,
            &unknown_field,
            &spaced_entry,
            &trailing_space,
        ] {
            assert!(AppendReader::read(other.as_bytes()).is_none(), "{other}");
            assert_decodes_as_serde_does(other.as_bytes());
        }
        // Numbers serde would refuse, or that do not fit a u64, are declined too.
        for bad in [
            compact.replacen(r#""term":3"#, r#""term":03"#, 1),
            compact.replacen(r#""term":3"#, r#""term":18446744073709551616"#, 1),
            compact.replacen(r#""term":3"#, r#""term":-3"#, 1),
        ] {
            assert!(AppendReader::read(bad.as_bytes()).is_none(), "{bad}");
            assert!(decode_append_entries(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_received_append_that_is_not_one_is_refused_naming_what_is_wrong() {
        let error = decode_append_entries(br#"{"vote":1}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("Vote"), "{error}");
        let mut append = serde_json::to_value(request(entries(1, 1))).unwrap();
        append["entries"][0] = serde_json::json!({"log_id": 7});
        let json = serde_json::to_vec(&append).unwrap();
        let error = decode_append_entries(&json).unwrap_err().to_string();
        assert!(error.contains("LogId"), "{error}");
    }

    #[test]
    fn a_spliced_append_stops_at_its_cap() {
        let mut carried = entries(1, 4);
        assert!(encode_each_within(&mut carried, usize::MAX));
        let rpc = request(carried);
        let length = serde_json::to_vec(&rpc).unwrap().len();
        let (buffer, result) = append_entries_json(&rpc, length - 1);
        assert!(result.is_err() && buffer.overflowed);
        let (buffer, result) = append_entries_json(&rpc, length);
        assert!(result.is_ok() && !buffer.overflowed);
    }
}
