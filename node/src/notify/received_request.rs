//! `ReceivedRequest`: one HTTP request as the local [`WebhookReceiver`] saw it, and
//! the parsing of a request head.
//!
//! [`WebhookReceiver`]: super::webhook_receiver::WebhookReceiver

use std::collections::BTreeMap;

/// One request the receiver answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceivedRequest {
    /// `POST`, `GET`, …
    pub method: String,
    /// The request target as sent, like `/fleet-ops` or `/hook?x=1`.
    pub path: String,
    /// Headers by lowercased name; repeated headers are joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The body, with invalid UTF-8 replaced.
    pub body: String,
}

impl ReceivedRequest {
    /// The body parsed as JSON, if it is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_str(&self.body).ok()
    }

    /// A header's value; `name` in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// A request head: everything before the body.
#[derive(Debug)]
pub(super) struct RequestHead {
    /// The request, with an empty body.
    pub request: ReceivedRequest,
    /// The body's length; 0 when `Content-Length` is absent, so a request without
    /// a body is answered at once instead of waiting for bytes that never come.
    pub content_length: usize,
    /// Whether the client waits for `100 Continue` before sending the body.
    pub expect_continue: bool,
}

/// Why a request head was refused: the status to answer with, and why.
pub(super) type HeadRefusal = (u16, &'static str);

/// Parses a request head (without the blank line that ends it).
pub(super) fn parse_head(head: &[u8], body_bytes_max: usize) -> Result<RequestHead, HeadRefusal> {
    let head = std::str::from_utf8(head).map_err(|_| (400, "the request head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(path), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err((400, "the request line is not `METHOD TARGET HTTP/1.1`"));
    };
    if method.is_empty() || path.is_empty() || !version.starts_with("HTTP/1.") {
        return Err((400, "the request line is not `METHOD TARGET HTTP/1.1`"));
    }
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err((400, "a header line has no `:`"));
        };
        let name = name.trim().to_ascii_lowercase();
        if name.is_empty() {
            return Err((400, "a header has no name"));
        }
        let value = value.trim();
        headers
            .entry(name)
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(value);
            })
            .or_insert_with(|| value.to_owned());
    }
    if headers.contains_key("transfer-encoding") {
        // Chunked bodies are not decoded by this small server; clients that know the
        // length (reqwest, curl -d) send Content-Length.
        return Err((411, "send the body with Content-Length"));
    }
    let content_length = match headers.get("content-length") {
        None => 0,
        Some(value) => value
            .parse::<usize>()
            .map_err(|_| (400, "Content-Length is not a number"))?,
    };
    if content_length > body_bytes_max {
        return Err((413, "the body is too large"));
    }
    let expect_continue = headers
        .get("expect")
        .is_some_and(|value| value.eq_ignore_ascii_case("100-continue"));
    Ok(RequestHead {
        request: ReceivedRequest {
            method: method.to_owned(),
            path: path.to_owned(),
            headers,
            body: String::new(),
        },
        content_length,
        expect_continue,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_parsed_with_lowercased_and_joined_headers() {
        let head = parse_head(
            b"POST /topic HTTP/1.1\r\nHost: x\r\nX-Tag: a\r\nx-tag: b\r\nContent-Length: 5",
            100,
        )
        .unwrap();
        assert_eq!(head.request.method, "POST");
        assert_eq!(head.request.path, "/topic");
        assert_eq!(head.request.header("X-TAG"), Some("a, b"));
        assert_eq!(head.content_length, 5);
        assert!(!head.expect_continue);
    }

    #[test]
    fn no_content_length_means_no_body() {
        let head = parse_head(b"GET / HTTP/1.1\r\nHost: x", 100).unwrap();
        assert_eq!(head.content_length, 0);
    }

    #[test]
    fn malformed_or_unsupported_heads_are_refused_with_a_status() {
        let refused = |head: &[u8]| parse_head(head, 10).unwrap_err().0;
        assert_eq!(refused(b"POST /"), 400);
        assert_eq!(refused(b"POST / HTTP/1.1 extra"), 400);
        assert_eq!(refused(b"POST / HTTP/1.1\r\nno colon"), 400);
        assert_eq!(refused(b"POST / HTTP/1.1\r\nContent-Length: x"), 400);
        assert_eq!(refused(b"POST / HTTP/1.1\r\nContent-Length: 11"), 413);
        assert_eq!(
            refused(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked"),
            411
        );
    }
}
