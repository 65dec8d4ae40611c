//! Scan marks: where a scan over a history kept in id order may start.
//!
//! Deliberations, notifications and messages are kept for good, in id order, and most
//! of them are done: decided with their notes written, settled for a sink, answered.
//! A mark is the first id that may not be done yet; everything before it is done. The
//! scans that run with every command start at a mark, so they cost what is not done,
//! not the whole history.

use std::collections::BTreeMap;

/// The first id at or after `from` whose item is not `done`, or `end` (the next id to
/// be given out) when every one is.
pub(crate) fn first_undone<K: Ord + Copy, V>(
    items: &BTreeMap<K, V>,
    from: K,
    end: K,
    done: impl Fn(&V) -> bool,
) -> K {
    items
        .range(from..)
        .find(|(_, item)| !done(item))
        .map_or(end, |(id, _)| *id)
}

/// The mark after the item `changed` changed: back to it if it is not done (any more),
/// then on past every item that is.
pub(crate) fn mark_after_change<K: Ord + Copy, V>(
    items: &BTreeMap<K, V>,
    mark: K,
    changed: K,
    end: K,
    done: impl Fn(&V) -> bool,
) -> K {
    let from = if items.get(&changed).is_some_and(&done) {
        mark
    } else {
        mark.min(changed)
    };
    first_undone(items, from, end, done)
}
