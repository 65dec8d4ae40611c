//! The client API edge: authentication, the gRPC service, and the read queries.
//!
//! # Layout
//! - [`api_connection`]: `ApiConnection`, a caller's TLS connection, and the
//!   certificates it presented.
//! - [`api_connector`]: `ApiConnector`, a call's TLS connection to a node's API.
//! - [`unvectored`]: `Unvectored`, why both send a gRPC message in one write.
//! - [`auth`]: tokens and certificates to one `Actor`.
//! - [`service`]: `FleetApi`, the `fleet.api.v1.Fleet` gRPC service.
//! - [`query`]: `Query` and its pure answers from the state.
//! - [`error`]: `ApiError`, mapped to gRPC status codes.

pub mod api_connection;
pub mod api_connector;
pub mod auth;
pub mod error;
pub mod query;
pub mod service;
pub mod unvectored;
