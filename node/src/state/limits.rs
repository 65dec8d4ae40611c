//! Limits: every collection and field the state machine keeps has an upper bound.
//!
//! The numbers of seed 002 (3 inputs per bot, 2 rounds, 1 minute a phase, 3 minutes in
//! all) and of seed 004 (verbatim bodies, never truncated) live here beside the sizes
//! that keep the replicated state and its snapshots bounded. A value past a limit is
//! refused with an error that names the limit; nothing is ever cut short.

/// Seed 002: at most 3 inputs per bot per deliberation.
pub const INPUTS_PER_BOT_MAX: usize = 3;
/// Seed 002: at most 2 rounds of back-and-forth (positions, then synthesis).
pub const ROUNDS_MAX: u8 = 2;
/// Seed 002: a phase lasts at most one minute.
pub const PHASE_MS_MAX: u64 = 60_000;
/// The shortest phase accepted; shorter ones leave agents no time to answer.
pub const PHASE_MS_MIN: u64 = 100;
/// Three phases: positions, synthesis, decision.
pub const PHASES: u64 = 3;

/// Deliberations open at once.
pub const OPEN_DELIBERATIONS_MAX: usize = 64;
/// Participants of one deliberation.
pub const PARTICIPANTS_MAX: usize = 16;
/// Options offered by one deliberation.
pub const OPTIONS_MAX: usize = 8;
/// Bytes of a deliberation topic.
pub const TOPIC_BYTES_MAX: usize = 500;
/// Bytes of an option or a stance.
pub const STANCE_BYTES_MAX: usize = 200;
/// Bytes of a position's summary ("1–2 sentences").
pub const SUMMARY_BYTES_MAX: usize = 600;
/// Concerns listed in one input.
pub const CONCERNS_MAX: usize = 5;
/// Bytes of one concern.
pub const CONCERN_BYTES_MAX: usize = 300;
/// Bytes of an operator's override decision or reason.
pub const OVERRIDE_BYTES_MAX: usize = 2_000;

/// Seed 004: bytes of an event or message body.
pub const BODY_BYTES_MAX: usize = 256 * 1024;
/// Seed 004: bytes of one artifact.
pub const ARTIFACT_BYTES_MAX: usize = 4 * 1024 * 1024;
/// Seed 004: bytes of an event's or artifact's metadata (type, stream, room, ids, keys).
pub const METADATA_BYTES_MAX: usize = 64 * 1024;
/// Bytes of a short identifier: session keys, event types, streams, rooms, idempotency keys.
pub const NAME_BYTES_MAX: usize = 128;
/// Bytes of a bulletin subject.
pub const SUBJECT_BYTES_MAX: usize = 300;
/// Bytes of a capability manifest.
pub const MANIFEST_BYTES_MAX: usize = 64 * 1024;
/// Sessions one node may publish.
pub const SESSIONS_PER_NODE_MAX: usize = 256;
/// Specialties one node may declare.
pub const SPECIALTIES_PER_NODE_MAX: usize = 32;
/// Nodes in one fleet.
pub const NODES_MAX: usize = 16;

/// Checks `value` against `limit` bytes, naming `field` when it is too large.
pub(crate) fn check_size(
    field: &str,
    value: &[u8],
    limit: usize,
) -> Result<(), super::error::RuleViolation> {
    if value.len() > limit {
        return Err(super::error::RuleViolation::TooLarge {
            field: field.into(),
            size: value.len(),
            limit,
        });
    }
    Ok(())
}

/// Checks that `value` is not blank and fits `limit` bytes.
pub(crate) fn check_text(
    field: &str,
    value: &str,
    limit: usize,
) -> Result<(), super::error::RuleViolation> {
    if value.trim().is_empty() {
        return Err(super::error::RuleViolation::invalid(
            field,
            "must not be empty",
        ));
    }
    check_size(field, value.as_bytes(), limit)
}
