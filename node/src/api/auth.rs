//! `Authenticator`: turns a caller's credentials into exactly one [`Actor`] (K3).
//!
//! The operator's token acts as the operator (or, when asked, as the node it calls);
//! a node's agent token acts only as that node — a bot on Mac can never act as Beast;
//! a write forwarded by another node carries the actor that node authenticated, and is
//! trusted only from a caller that presented a certificate of this fleet; such a
//! caller without a token (a forwarded read) acts as the node its certificate names.
//! Tokens are compared in constant time.

use super::error::ApiError;
use crate::config::AuthConfig;
use crate::state::{Actor, NodeName};

/// Checks credentials for one node.
pub struct Authenticator {
    node: NodeName,
    tokens: AuthConfig,
}

/// What a call presented.
pub struct Credentials<'a> {
    /// The bearer token of the `authorization` metadata, if any.
    pub token: Option<&'a str>,
    /// The node name in the caller's verified certificate, if it presented one.
    pub peer_node: Option<&'a str>,
    /// The caller asked to act as the receiving node.
    pub as_node: bool,
    /// The actor a forwarding node authenticated.
    pub forwarded_actor: Option<Actor>,
}

impl Authenticator {
    /// An authenticator for `node` with its configured tokens.
    pub fn new(node: NodeName, tokens: AuthConfig) -> Self {
        Self { node, tokens }
    }

    /// The actor the credentials act as.
    pub fn authenticate(&self, credentials: &Credentials<'_>) -> Result<Actor, ApiError> {
        if let Some(actor) = &credentials.forwarded_actor {
            return match credentials.peer_node {
                Some(_) => Ok(actor.clone()),
                None => Err(ApiError::Unauthenticated(
                    "a forwarded write must come from a node with a certificate of this fleet"
                        .into(),
                )),
            };
        }
        let Some(token) = credentials.token else {
            // A node of this fleet, proven by its certificate (a forwarded read, say),
            // acts as itself.
            if let Some(peer) = credentials.peer_node {
                return NodeName::new(peer)
                    .map(Actor::Node)
                    .map_err(|e| ApiError::Unauthenticated(format!("certificate name: {e}")));
            }
            return Err(ApiError::Unauthenticated(format!(
                "no token: send `authorization: Bearer <token>` with the operator token or {}'s agent token",
                self.node
            )));
        };
        if self.tokens.is_operator_token(token) {
            return Ok(if credentials.as_node {
                Actor::Node(self.node.clone())
            } else {
                Actor::Operator
            });
        }
        if self.tokens.is_agent_token(token) {
            return Ok(Actor::Node(self.node.clone()));
        }
        Err(ApiError::Unauthenticated(format!(
            "wrong token for {}: use the operator token or this node's agent token",
            self.node
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SecretToken;

    fn mac() -> Authenticator {
        let tokens = AuthConfig {
            operator_token: Some(SecretToken::new("operator-secret-123456")),
            agent_token: Some(SecretToken::new("mac-agent-secret-123456")),
            ..AuthConfig::default()
        };
        Authenticator::new(NodeName::new("mac").unwrap(), tokens)
    }

    fn with_token(token: &str, as_node: bool) -> Credentials<'_> {
        Credentials {
            token: Some(token),
            peer_node: None,
            as_node,
            forwarded_actor: None,
        }
    }

    #[test]
    fn the_operator_token_acts_as_the_operator_or_the_node_when_asked() {
        assert_eq!(
            mac()
                .authenticate(&with_token("operator-secret-123456", false))
                .unwrap(),
            Actor::Operator
        );
        assert_eq!(
            mac()
                .authenticate(&with_token("operator-secret-123456", true))
                .unwrap(),
            Actor::Node(NodeName::new("mac").unwrap())
        );
    }

    #[test]
    fn an_agent_token_acts_only_as_its_own_node() {
        let actor = mac()
            .authenticate(&with_token("mac-agent-secret-123456", false))
            .unwrap();
        assert_eq!(actor, Actor::Node(NodeName::new("mac").unwrap()));
    }

    #[test]
    fn a_wrong_or_missing_token_is_refused() {
        assert!(mac().authenticate(&with_token("guess", false)).is_err());
        let none = Credentials {
            token: None,
            peer_node: None,
            as_node: false,
            forwarded_actor: None,
        };
        assert!(
            mac()
                .authenticate(&none)
                .unwrap_err()
                .to_string()
                .contains("no token")
        );
    }

    #[test]
    fn a_fleet_node_certificate_without_a_token_acts_as_that_node() {
        let from_beast = Credentials {
            token: None,
            peer_node: Some("beast"),
            as_node: false,
            forwarded_actor: None,
        };
        assert_eq!(
            mac().authenticate(&from_beast).unwrap(),
            Actor::Node(NodeName::new("beast").unwrap())
        );
    }

    #[test]
    fn a_forwarded_actor_is_trusted_only_from_a_fleet_node() {
        let forwarded = |peer_node| Credentials {
            token: None,
            peer_node,
            as_node: false,
            forwarded_actor: Some(Actor::Operator),
        };
        assert_eq!(
            mac().authenticate(&forwarded(Some("beast"))).unwrap(),
            Actor::Operator
        );
        assert!(mac().authenticate(&forwarded(None)).is_err());
    }
}
