//! `CappedBuffer`: the buffer Raft messages and log entries are encoded into, which
//! refuses to grow past a cap, so that an encoding that turns out large stops early
//! and is done again off the runtime (see [`ON_RUNTIME_BYTES_MAX`]).
//!
//! [`ON_RUNTIME_BYTES_MAX`]: super::network::ON_RUNTIME_BYTES_MAX

use serde::Serialize;

/// The bytes a [`CappedBuffer`] holds before it first grows.
pub(crate) const FIRST_CAPACITY: usize = 1024;

/// A buffer that refuses to grow past its cap.
pub(crate) struct CappedBuffer {
    pub(crate) bytes: Vec<u8>,
    cap: usize,
    pub(crate) overflowed: bool,
}

impl CappedBuffer {
    /// An empty buffer that takes at most `cap` bytes, with room for a small message
    /// (an append that carries one event fits), so that it does not grow again and
    /// again as the tokens come.
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(cap.min(FIRST_CAPACITY)),
            cap,
            overflowed: false,
        }
    }

    /// `value` as JSON in a buffer of at most `cap` bytes, and whether that worked (when
    /// it did not, `overflowed` tells a value too large from one that cannot be
    /// encoded). The serializer owns the buffer, so each token it writes is a direct
    /// call of [`write_all`](std::io::Write::write_all) below.
    pub(crate) fn json<T: Serialize + ?Sized>(
        value: &T,
        cap: usize,
    ) -> (Self, serde_json::Result<()>) {
        let mut serializer = serde_json::Serializer::new(Self::new(cap));
        let result = value.serialize(&mut serializer);
        (serializer.into_inner(), result)
    }
}

/// `serde_json` writes a token at a time (a brace, a key, a number), some hundred for
/// one log entry, and an append's hand-written frame a piece at a time too
/// (`wire::append_entries_json`), so each write is one bounds check and a copy:
/// `write_all` is the call they make, and left to its default it would loop through
/// `write` for each token.
impl std::io::Write for CappedBuffer {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if self.bytes.len() + buf.len() > self.cap {
            self.overflowed = true;
            return Err(std::io::Error::other("over the cap"));
        }
        // Most tokens are one byte (`{`, `"`, `:`, `,`), which a push stores without
        // calling `memcpy`.
        match buf {
            [byte] => self.bytes.push(*byte),
            _ => self.bytes.extend_from_slice(buf),
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
