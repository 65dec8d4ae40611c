//! The QUIC transport's frames: one request frame and one reply frame per stream.
//!
//! ```text
//! request: [kind u8][len u32 big-endian][payload: len bytes]
//! reply:   [status u8][len u32 big-endian][payload, or a UTF-8 message: len bytes]
//! ```
//!
//! Reply status 0 is success, 1 a failure of the peer's handler (its message follows),
//! and 2 a request the receiver refused before handling it (unknown kind, malformed or
//! oversized frame), so the caller can tell its own protocol error from the peer's
//! failure. A frame must fill its stream exactly: the sender finishes the stream after
//! it, and trailing bytes are refused.

use bytes::Bytes;

use super::RpcKind;

/// The largest payload an RPC may carry on either transport, snapshots included.
///
/// Raft's snapshots travel in one `InstallSnapshot` message, so this bounds the state a
/// fleet can replicate; it is also the most a peer can make a node buffer per RPC.
pub const PAYLOAD_MAX_BYTES: usize = 64 * 1024 * 1024;

/// Bytes in a frame header: the kind or status byte and the big-endian length.
pub(crate) const FRAME_HEADER_LEN: usize = 5;

/// The largest whole frame, header included.
pub(crate) const FRAME_MAX_BYTES: usize = FRAME_HEADER_LEN + PAYLOAD_MAX_BYTES;

/// How the receiver answered a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReplyStatus {
    /// The handler's reply follows.
    Ok,
    /// The handler failed; its message follows.
    RemoteError,
    /// The receiver refused the frame without handling it; the reason follows.
    Refused,
}

impl ReplyStatus {
    fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::RemoteError => 1,
            Self::Refused => 2,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Ok),
            1 => Some(Self::RemoteError),
            2 => Some(Self::Refused),
            _ => None,
        }
    }
}

/// Encodes a frame: the header byte, the payload's length, the payload.
///
/// The caller has checked `payload.len() <= PAYLOAD_MAX_BYTES`, which fits in a `u32`.
fn encode(first: u8, payload: &[u8]) -> Vec<u8> {
    assert!(
        payload.len() <= PAYLOAD_MAX_BYTES,
        "frame payload of {} bytes passed the size check",
        payload.len()
    );
    let len = u32::try_from(payload.len()).expect("PAYLOAD_MAX_BYTES fits in u32");
    let mut frame = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
    frame.push(first);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// Splits a whole frame into its header byte and payload, checking the length field.
fn decode(frame: Bytes) -> Result<(u8, Bytes), String> {
    if frame.len() < FRAME_HEADER_LEN {
        return Err(format!(
            "frame of {} bytes is shorter than its {FRAME_HEADER_LEN}-byte header",
            frame.len()
        ));
    }
    let len = u32::from_be_bytes([frame[1], frame[2], frame[3], frame[4]]) as usize;
    if len > PAYLOAD_MAX_BYTES {
        return Err(format!(
            "frame announces {len} bytes, over the limit of {PAYLOAD_MAX_BYTES}"
        ));
    }
    let body = frame.len() - FRAME_HEADER_LEN;
    if body != len {
        return Err(format!("frame announces {len} bytes but carries {body}"));
    }
    Ok((frame[0], frame.slice(FRAME_HEADER_LEN..)))
}

/// The request frame for `payload` (at most [`PAYLOAD_MAX_BYTES`]).
pub(crate) fn encode_request(kind: RpcKind, payload: &[u8]) -> Vec<u8> {
    encode(kind.code(), payload)
}

/// A whole request frame's kind and payload.
pub(crate) fn decode_request(frame: Bytes) -> Result<(RpcKind, Bytes), String> {
    let (code, payload) = decode(frame)?;
    let kind = RpcKind::from_code(code).ok_or_else(|| format!("unknown RPC kind code {code}"))?;
    Ok((kind, payload))
}

/// The reply frame for `status` and `payload` (at most [`PAYLOAD_MAX_BYTES`]).
pub(crate) fn encode_reply(status: ReplyStatus, payload: &[u8]) -> Vec<u8> {
    encode(status.code(), payload)
}

/// A whole reply frame's status and payload.
pub(crate) fn decode_reply(frame: Bytes) -> Result<(ReplyStatus, Bytes), String> {
    let (code, payload) = decode(frame)?;
    let status =
        ReplyStatus::from_code(code).ok_or_else(|| format!("unknown reply status {code}"))?;
    Ok((status, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_and_reply_frames_round_trip() {
        let request = encode_request(RpcKind::Vote, b"hello");
        assert_eq!(&request[..5], &[2, 0, 0, 0, 5]);
        assert_eq!(
            decode_request(Bytes::from(request)).unwrap(),
            (RpcKind::Vote, Bytes::from_static(b"hello"))
        );
        let reply = encode_reply(ReplyStatus::RemoteError, b"no");
        assert_eq!(
            decode_reply(Bytes::from(reply)).unwrap(),
            (ReplyStatus::RemoteError, Bytes::from_static(b"no"))
        );
    }

    #[test]
    fn malformed_frames_are_refused_with_a_reason() {
        assert!(decode_request(Bytes::from_static(&[1, 0])).is_err());
        assert!(decode_request(Bytes::from_static(&[9, 0, 0, 0, 0])).is_err());
        assert!(decode_request(Bytes::from_static(&[1, 0, 0, 0, 2, 7])).is_err());
        assert!(decode_reply(Bytes::from_static(&[3, 0, 0, 0, 0])).is_err());
        let oversized = (PAYLOAD_MAX_BYTES as u32 + 1).to_be_bytes();
        let frame = [&[1u8][..], &oversized[..]].concat();
        let error = decode_request(Bytes::from(frame)).unwrap_err();
        assert!(error.contains("over the limit"), "{error}");
    }
}
