//! `RuleViolation`: every refusal of the replicated state machine.
//!
//! A refusal is a value, not a failure: the command was well formed on the wire but
//! broke a rule of the fleet, and the state is left exactly as it was. Each variant
//! names the rule and carries the values that broke it, so the message a person or an
//! agent sees says what was wrong and what to do (`mac has already given 3 inputs to
//! deliberation d-17 (limit 3)`). `code()` gives a stable machine-readable name for
//! the wire and for scripts.

use thiserror::Error;

/// A command the state machine refused; the state did not change.
#[derive(Clone, Debug, PartialEq, Eq, Error, serde::Serialize, serde::Deserialize)]
pub enum RuleViolation {
    /// A field's value is malformed or out of its allowed range.
    #[error("invalid {field}: {reason}")]
    InvalidField { field: String, reason: String },

    /// A field is larger than its limit; nothing is ever truncated.
    #[error("{field} is {size} bytes, over the limit of {limit} bytes; nothing was stored")]
    TooLarge {
        field: String,
        size: usize,
        limit: usize,
    },

    /// The fleet has not been bootstrapped yet.
    #[error("the fleet is not bootstrapped yet: run `fleetctl cluster init` first")]
    NotBootstrapped,

    /// Bootstrap was attempted on a fleet that already exists.
    #[error("fleet `{fleet}` is already bootstrapped")]
    AlreadyBootstrapped { fleet: String },

    /// The actor may not perform this action.
    #[error("{actor} may not {action}: {rule}")]
    Unauthorized {
        actor: String,
        action: String,
        rule: String,
    },

    /// A node name that is not a member of the fleet.
    #[error("`{node}` is not a member of this fleet (members: {members})")]
    UnknownNode { node: String, members: String },

    /// A role holder acted with an epoch that is no longer current.
    #[error(
        "stale epoch: {actor} acted as {role} with epoch {presented}, but the {role} is now {holder} since epoch {current}"
    )]
    StaleEpoch {
        role: String,
        actor: String,
        presented: u64,
        holder: String,
        current: u64,
    },

    /// An id that names no deliberation.
    #[error("no deliberation `{id}`")]
    UnknownDeliberation { id: String },

    /// Input to a deliberation that has already been decided.
    #[error("deliberation {id} is already decided ({decided_by}); no more inputs are taken")]
    DeliberationClosed { id: String, decided_by: String },

    /// A node that is not among the deliberation's participants tried to give input.
    #[error("{node} is not a participant of deliberation {id} (participants: {participants})")]
    NotAParticipant {
        node: String,
        id: String,
        participants: String,
    },

    /// The per-bot input limit of the deliberation protocol (seed 002: at most 3).
    #[error("{node} has already given {given} inputs to deliberation {id} (limit {limit})")]
    InputLimit {
        node: String,
        id: String,
        given: usize,
        limit: usize,
    },

    /// The back-and-forth limit of the deliberation protocol (seed 002: at most 2 rounds).
    #[error(
        "deliberation {id} allows at most {limit} rounds of back-and-forth; round {requested} is refused"
    )]
    RoundLimit {
        id: String,
        requested: u8,
        limit: u8,
    },

    /// Input addressed to a round the deliberation is not in.
    #[error("deliberation {id} is in {current}, not round {requested}")]
    WrongRound {
        id: String,
        requested: u8,
        current: String,
    },

    /// A stance that is not one of the deliberation's options.
    #[error("stance `{stance}` is not an option of deliberation {id} (options: {options})")]
    UnknownOption {
        stance: String,
        id: String,
        options: String,
    },

    /// Too many deliberations open at once.
    #[error("{open} deliberations are open (limit {limit}); wait for one to be decided")]
    TooManyOpenDeliberations { open: usize, limit: usize },

    /// An idempotency key reused for a different request.
    #[error("idempotency key `{key}` was already used for a different {what}; use a new key")]
    IdempotencyConflict { key: String, what: String },

    /// A session key that is unknown or expired.
    #[error("no live session `{key}`{hint}")]
    UnknownSession { key: String, hint: String },

    /// A session key already published by another node.
    #[error("session `{key}` belongs to {owner}; {node} cannot publish it")]
    SessionOwnedElsewhere {
        key: String,
        owner: String,
        node: String,
    },

    /// A message id that names no relayed message.
    #[error("no message `{id}`")]
    UnknownMessage { id: String },

    /// An event id that names no event.
    #[error("no event {id} (the log holds events 1 to {last})")]
    UnknownEvent { id: u64, last: u64 },

    /// A second claim on a request that is already claimed.
    #[error("event {event} is already claimed by {holder} (ack event {ack})")]
    AlreadyClaimed {
        event: u64,
        holder: String,
        ack: u64,
    },

    /// An artifact whose content does not hash to the sha256 it was given with.
    #[error("artifact content hashes to {actual}, not to the given sha256 {claimed}")]
    ArtifactHashMismatch { claimed: String, actual: String },

    /// A stored artifact whose content no longer matches its sha256.
    #[error("artifact {sha256} is corrupt: its content hashes to {actual}")]
    ArtifactCorrupt { sha256: String, actual: String },

    /// A sha256 that names no artifact.
    #[error("no artifact with sha256 {sha256}")]
    UnknownArtifact { sha256: String },

    /// An id that names no bulletin item.
    #[error("no bulletin item `{id}`")]
    UnknownBulletin { id: String },

    /// An acknowledgement from a node the item is not addressed to.
    #[error("bulletin item {id} is addressed to {target}, not to {node}")]
    NotABulletinTarget {
        id: String,
        target: String,
        node: String,
    },

    /// A notification id that names no outbox entry.
    #[error("no notification `{id}`")]
    UnknownNotification { id: String },

    /// A snapshot written in a format this build does not read.
    #[error(
        "snapshot format version {found} is not supported (this build reads version {supported})"
    )]
    UnsupportedSnapshotVersion { found: u32, supported: u32 },

    /// A snapshot that could not be decoded.
    #[error("snapshot could not be decoded: {reason}")]
    CorruptSnapshot { reason: String },
}

impl RuleViolation {
    /// A stable, machine-readable name of the rule, for the wire and for scripts.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidField { .. } => "invalid_field",
            Self::TooLarge { .. } => "too_large",
            Self::NotBootstrapped => "not_bootstrapped",
            Self::AlreadyBootstrapped { .. } => "already_bootstrapped",
            Self::Unauthorized { .. } => "unauthorized",
            Self::UnknownNode { .. } => "unknown_node",
            Self::StaleEpoch { .. } => "stale_epoch",
            Self::UnknownDeliberation { .. } => "unknown_deliberation",
            Self::DeliberationClosed { .. } => "deliberation_closed",
            Self::NotAParticipant { .. } => "not_a_participant",
            Self::InputLimit { .. } => "input_limit",
            Self::RoundLimit { .. } => "round_limit",
            Self::WrongRound { .. } => "wrong_round",
            Self::UnknownOption { .. } => "unknown_option",
            Self::TooManyOpenDeliberations { .. } => "too_many_open_deliberations",
            Self::IdempotencyConflict { .. } => "idempotency_conflict",
            Self::UnknownSession { .. } => "unknown_session",
            Self::SessionOwnedElsewhere { .. } => "session_owned_elsewhere",
            Self::UnknownMessage { .. } => "unknown_message",
            Self::UnknownEvent { .. } => "unknown_event",
            Self::AlreadyClaimed { .. } => "already_claimed",
            Self::ArtifactHashMismatch { .. } => "artifact_hash_mismatch",
            Self::ArtifactCorrupt { .. } => "artifact_corrupt",
            Self::UnknownArtifact { .. } => "unknown_artifact",
            Self::UnknownBulletin { .. } => "unknown_bulletin",
            Self::NotABulletinTarget { .. } => "not_a_bulletin_target",
            Self::UnknownNotification { .. } => "unknown_notification",
            Self::UnsupportedSnapshotVersion { .. } => "unsupported_snapshot_version",
            Self::CorruptSnapshot { .. } => "corrupt_snapshot",
        }
    }

    /// Shorthand for [`RuleViolation::InvalidField`].
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidField {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// Joins names for an error message: `beast, 5070, mac`.
pub(crate) fn join_names<T: std::fmt::Display>(names: impl IntoIterator<Item = T>) -> String {
    let joined: Vec<String> = names.into_iter().map(|n| n.to_string()).collect();
    if joined.is_empty() {
        "none".into()
    } else {
        joined.join(", ")
    }
}
