//! `KeyIndex`: an author's earlier use of an idempotency key, found without a scan.
//!
//! An event append or a message send with an idempotency key must find what the same
//! author already made with that key. The event log and the message relay are never
//! trimmed, so a scan would cost more with every item; each keeps this index instead.
//! It is derived from the items: a snapshot does not carry it, and decoding one
//! rebuilds it.

use std::collections::HashMap;

/// Author → idempotency key → the id of the newest item they made with it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyIndex<Id>(HashMap<String, HashMap<String, Id>>);

impl<Id: Copy> KeyIndex<Id> {
    /// The id of the newest item `author` made with `key`.
    pub fn get(&self, author: &str, key: &str) -> Option<Id> {
        self.0.get(author)?.get(key).copied()
    }

    /// Records `id` as the newest item `author` made with `key`.
    pub fn insert(&mut self, author: &str, key: &str, id: Id) {
        // The author's name is copied only for their first key, not on every insert.
        let keys = match self.0.get_mut(author) {
            Some(keys) => keys,
            None => self.0.entry(author.to_owned()).or_default(),
        };
        keys.insert(key.to_owned(), id);
    }
}
