//! `NodeConfig`: the example configs load, placeholders are refused naming the key,
//! `FLEET_*` overrides apply, and every bad value is reported with its key.
//!
//! Every test runs inside `figment::Jail`, which serialises the tests that touch the
//! environment, so overrides set by one test never leak into another.

// `Jail::expect_with` closures must return `figment::Error`, which is large.
#![allow(clippy::result_large_err)]

use std::path::{Path, PathBuf};

use figment::Jail;
use fleet_node::config::{ConfigError, NodeConfig, SecretToken, TransportMode};

const OPERATOR_TOKEN: &str = "0123456789abcdef0123456789abcdef";
const AGENT_TOKEN: &str = "fedcba9876543210fedcba9876543210";

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../config")
        .join(format!("{name}.toml"))
}

/// A minimal valid config; tests append or replace lines.
fn valid_config() -> String {
    format!("name = \"beast\"\nfleet = \"home\"\n[auth]\noperator_token = \"{OPERATOR_TOKEN}\"\n")
}

fn write(jail: &Jail, file: &str, contents: &str) -> PathBuf {
    jail.create_file(file, contents).unwrap();
    jail.directory().join(file)
}

fn load_error(path: &Path) -> ConfigError {
    match NodeConfig::load(path) {
        Ok(config) => panic!("{} was accepted: {config:?}", path.display()),
        Err(error) => error,
    }
}

#[test]
fn every_example_refuses_its_placeholder_tokens_until_they_are_overridden() {
    for name in ["beast", "5070", "mac"] {
        Jail::expect_with(|jail| {
            let path = example(name);

            let error = load_error(&path);
            assert!(
                matches!(error, ConfigError::PlaceholderToken { .. }),
                "{name}: {error}"
            );
            assert_eq!(error.key(), "auth.operator_token", "{name}: {error}");
            assert!(error.to_string().starts_with("auth.operator_token "));

            jail.set_env("FLEET_AUTH__OPERATOR_TOKEN", OPERATOR_TOKEN);
            let error = load_error(&path);
            assert_eq!(error.key(), "auth.agent_token", "{name}: {error}");

            jail.set_env("FLEET_AUTH__AGENT_TOKEN", AGENT_TOKEN);
            let config = NodeConfig::load(&path).unwrap();
            config.validate().unwrap();
            assert_eq!(config.name, name);
            assert_eq!(config.fleet, "home");
            assert_eq!(config.transport, TransportMode::Auto);
            assert_eq!(config.peers.len(), 3);
            assert!(config.peers.contains_key(name));
            assert_eq!(
                config.advertised_api(),
                config.peers[name].api,
                "{name}: its own peer entry is its advertised address"
            );
            assert!(config.auth.is_operator_token(OPERATOR_TOKEN));
            assert!(config.auth.is_agent_token(AGENT_TOKEN));
            assert!(!config.auth.is_agent_token(OPERATOR_TOKEN));

            let config_dir = path.parent().unwrap();
            let config_dir = std::path::absolute(config_dir).unwrap();
            assert_eq!(config.tls.ca_cert, config_dir.join("../ca.pem"));
            assert_eq!(config.tls.cert, config_dir.join("node.pem"));
            assert_eq!(config.data_dir, config_dir.join("data"));
            Ok(())
        });
    }
}

#[test]
fn environment_overrides_nested_keys_and_numeric_names() {
    Jail::expect_with(|jail| {
        let path = write(jail, "node.toml", &valid_config());
        jail.set_env("FLEET_RAFT__HEARTBEAT_MS", "50");
        jail.set_env("FLEET_NAME", "5070");
        jail.set_env("FLEET_TRANSPORT", "grpc");
        jail.set_env("FLEET_WORKER_THREADS", "2");
        jail.set_env("FLEET_SPIN_WINDOW_US", "0");
        // Another tool's variable with the prefix is left alone.
        jail.set_env("FLEET_CONFIG", "/somewhere/else.toml");
        let config = NodeConfig::load(&path).unwrap();
        assert_eq!(config.raft.heartbeat_ms, 50);
        assert_eq!(config.name, "5070");
        assert_eq!(config.transport, TransportMode::Grpc);
        assert_eq!(config.worker_threads, 2);
        assert_eq!(config.spin_window_us, Some(0));
        Ok(())
    });
}

#[test]
fn defaults_fill_every_optional_key() {
    Jail::expect_with(|jail| {
        let path = write(jail, "node.toml", &valid_config());
        let config = NodeConfig::load(&path).unwrap();
        assert_eq!(config.api_listen.to_string(), "127.0.0.1:7100");
        assert_eq!(config.raft_listen.to_string(), "127.0.0.1:7101");
        assert_eq!(config.advertised_api(), "127.0.0.1:7100");
        assert_eq!(config.advertised_raft(), "127.0.0.1:7101");
        assert_eq!(config.raft.heartbeat_ms, 100);
        assert_eq!(config.raft.election_timeout_min_ms, 200);
        assert_eq!(config.raft.election_timeout_max_ms, 400);
        assert_eq!(config.raft.snapshot_every_logs, 5000);
        assert_eq!(config.raft.rpc_timeout_ms, 1000);
        assert_eq!(config.worker_threads, 1);
        assert_eq!(config.spin_window_us, None, "unset: the host decides");
        assert_eq!(config.transport, TransportMode::Auto);
        assert_eq!(config.tls.key, jail.directory().join("node.key"));
        assert!(config.auth.agent_token.is_none());
        assert!(config.peers.is_empty());
        Ok(())
    });
}

/// Each case: an extra TOML snippet (or a replaced config), and the exact text the
/// error must contain.
#[test]
fn bad_values_are_refused_with_the_key_named() {
    let cases: [(&str, String, &str); 12] = [
        (
            "no worker thread",
            format!("worker_threads = 0\n{}", valid_config()),
            "worker_threads: 0 is outside 1..=64",
        ),
        (
            "a spin window past its bound",
            format!("spin_window_us = 20000\n{}", valid_config()),
            "spin_window_us: 20000 is outside 0..=10000",
        ),
        (
            "election timeouts out of order",
            format!(
                "{}[raft]\nelection_timeout_min_ms = 800\nelection_timeout_max_ms = 600\n",
                valid_config()
            ),
            "raft.election_timeout_min_ms (800) must be below raft.election_timeout_max_ms (600)",
        ),
        (
            "heartbeat not below the election timeout",
            format!("{}[raft]\nheartbeat_ms = 300\n", valid_config()),
            "raft.heartbeat_ms (300) must be below raft.election_timeout_min_ms (200)",
        ),
        (
            "unknown transport",
            format!("transport = \"udp\"\n{}", valid_config()),
            "transport: \"udp\" is not one of quic, grpc, auto",
        ),
        (
            "wrong type",
            format!("{}[raft]\nheartbeat_ms = \"fast\"\n", valid_config()),
            "raft.heartbeat_ms: invalid type",
        ),
        (
            "misspelt key",
            format!("{}[raft]\nheartbeat_msec = 50\n", valid_config()),
            "raft.heartbeat_msec: unknown field",
        ),
        (
            "missing name",
            format!("fleet = \"home\"\n[auth]\noperator_token = \"{OPERATOR_TOKEN}\"\n"),
            "name: missing field",
        ),
        (
            "bad node name",
            valid_config().replace("\"beast\"", "\"Beast\""),
            "name: `Beast` contains `B`",
        ),
        (
            "short token",
            valid_config().replace(OPERATOR_TOKEN, "short"),
            "auth.operator_token is 5 characters long",
        ),
        (
            "wildcard listen without an advertised address",
            format!("api_listen = \"0.0.0.0:7100\"\n{}", valid_config()),
            "advertise_api: must be set because api_listen (0.0.0.0:7100) listens on every interface",
        ),
        (
            "peer without a port",
            format!(
                "{}[peers.mac]\napi = \"mac.tailnet\"\nraft = \"100.64.0.3:7105\"\n",
                valid_config()
            ),
            "peers.mac.api: \"mac.tailnet\" is not host:port",
        ),
    ];
    for (case, contents, expected) in cases {
        Jail::expect_with(|jail| {
            let path = write(jail, "node.toml", &contents);
            let message = load_error(&path).to_string();
            assert!(
                message.contains(expected),
                "{case}: `{message}` does not contain `{expected}`"
            );
            Ok(())
        });
    }
}

#[test]
fn a_bad_environment_value_names_the_key_and_the_variable() {
    Jail::expect_with(|jail| {
        let path = write(jail, "node.toml", &valid_config());
        jail.set_env("FLEET_RAFT__HEARTBEAT_MS", "soon");
        let message = load_error(&path).to_string();
        assert!(message.starts_with("raft.heartbeat_ms: "), "{message}");
        assert!(message.contains("FLEET_RAFT__HEARTBEAT_MS"), "{message}");
        Ok(())
    });
}

#[test]
fn tokens_come_from_files_relative_to_the_config() {
    Jail::expect_with(|jail| {
        jail.create_dir("node")?;
        jail.create_file("operator.token", &format!("{OPERATOR_TOKEN}\n"))?;
        jail.create_file("node/agent.token", AGENT_TOKEN)?;
        let path = write(
            jail,
            "node/fleetd.toml",
            "name = \"mac\"\nfleet = \"home\"\n[auth]\noperator_token_file = \"../operator.token\"\nagent_token_file = \"agent.token\"\n",
        );
        let config = NodeConfig::load(&path).unwrap();
        assert!(config.auth.is_operator_token(OPERATOR_TOKEN));
        assert!(config.auth.is_agent_token(AGENT_TOKEN));

        jail.set_env("FLEET_AUTH__OPERATOR_TOKEN", OPERATOR_TOKEN);
        let message = load_error(&path).to_string();
        assert!(
            message.contains("auth.operator_token and auth.operator_token_file are both set"),
            "{message}"
        );
        Ok(())
    });
}

#[test]
fn token_file_problems_name_the_file_key() {
    Jail::expect_with(|jail| {
        jail.create_file("placeholder.token", "CHANGE-ME-TO-A-SECRET\n")?;
        let path = write(
            jail,
            "node.toml",
            "name = \"mac\"\nfleet = \"home\"\n[auth]\noperator_token_file = \"placeholder.token\"\n",
        );
        let error = load_error(&path);
        assert_eq!(error.key(), "auth.operator_token_file", "{error}");
        assert!(matches!(error, ConfigError::PlaceholderToken { .. }));

        let path = write(
            jail,
            "missing.toml",
            "name = \"mac\"\nfleet = \"home\"\n[auth]\noperator_token_file = \"nowhere.token\"\n",
        );
        let error = load_error(&path);
        assert_eq!(error.key(), "auth.operator_token_file", "{error}");
        assert!(error.to_string().contains("nowhere.token"), "{error}");
        Ok(())
    });
}

#[test]
fn the_agent_token_must_differ_from_the_operator_token() {
    Jail::expect_with(|jail| {
        let contents = format!("{}agent_token = \"{OPERATOR_TOKEN}\"\n", valid_config());
        let path = write(jail, "node.toml", &contents);
        let error = load_error(&path);
        assert_eq!(error.key(), "auth.agent_token", "{error}");
        Ok(())
    });
}

#[test]
fn a_missing_operator_token_or_file_is_refused() {
    Jail::expect_with(|jail| {
        let path = write(jail, "node.toml", "name = \"mac\"\nfleet = \"home\"\n");
        let error = load_error(&path);
        assert_eq!(error.key(), "auth.operator_token", "{error}");

        let missing = jail.directory().join("absent.toml");
        assert!(matches!(
            load_error(&missing),
            ConfigError::FileMissing { .. }
        ));
        Ok(())
    });
}

#[test]
fn secret_tokens_compare_by_value_and_never_print() {
    let token = SecretToken::new(format!("  {OPERATOR_TOKEN}\n"));
    assert!(token.matches(OPERATOR_TOKEN));
    assert!(!token.matches(AGENT_TOKEN));
    assert!(!token.matches(&OPERATOR_TOKEN[..10]));
    assert!(!format!("{token:?}").contains(OPERATOR_TOKEN));
}
