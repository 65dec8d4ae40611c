//! `fleetctl init` end to end: the real binary writes a fleet whose node configs
//! load and validate, whose certificates carry the node names, whose secrets are
//! private, and which it refuses to overwrite.

use std::path::Path;
use std::process::{Command, Output};

use figment::providers::Env;
use fleet_node::config::NodeConfig;
use fleet_node::identity::node_name_from_cert;

const NODES: [&str; 3] = ["beast", "5070", "mac"];

fn fleetctl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleetctl"))
        .args(args)
        .env_remove("FLEETCTL_CONFIG")
        .output()
        .unwrap()
}

/// Loads a node config without the environment of whoever runs the tests.
fn load_node_config(path: &Path) -> NodeConfig {
    NodeConfig::load_with(path, Env::prefixed("FLEETCTL_INIT_TEST_NO_OVERRIDES_"))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn init_writes_a_fleet_whose_configs_load_and_whose_certificates_name_their_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let fleet_dir = dir.path().join("fleet");
    let fleet_arg = fleet_dir.to_str().unwrap();
    let output = fleetctl(&[
        "init",
        "--dir",
        fleet_arg,
        "--nodes",
        "beast,5070,mac",
        "--base-port",
        "7200",
        "-o",
        "json",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["fleet"], "home");
    assert_eq!(report["nodes"].as_array().unwrap().len(), NODES.len());

    for (index, name) in NODES.iter().enumerate() {
        let config_path = fleet_dir.join(name).join("fleetd.toml");
        let config = load_node_config(&config_path);
        config.validate().unwrap();
        assert_eq!(config.name, *name);
        assert_eq!(config.fleet, "home");
        let api_port = 7200 + 2 * index as u16;
        assert_eq!(config.api_listen.port(), api_port);
        assert_eq!(config.raft_listen.port(), api_port + 1);
        assert_eq!(config.peers.len(), NODES.len());
        assert_eq!(report["nodes"][index]["name"], *name);
        assert_eq!(
            report["nodes"][index]["api"],
            format!("127.0.0.1:{api_port}")
        );

        let identity = config.load_identity().unwrap();
        assert_eq!(
            node_name_from_cert(&identity.cert_chain[0]).as_deref(),
            Some(*name)
        );
        assert_eq!(
            config.load_ca_cert().unwrap().fleet().as_deref(),
            Some("home")
        );
        assert!(config.auth.agent_token.is_some());
        assert_ne!(config.auth.agent_token, config.auth.operator_token);
    }

    let client_config = std::fs::read_to_string(fleet_dir.join("fleetctl.toml")).unwrap();
    let client_config: toml::Table = toml::from_str(&client_config).unwrap();
    assert_eq!(client_config["fleet"].as_str(), Some("home"));
    assert_eq!(client_config["ca_cert"].as_str(), Some("ca.pem"));
    assert_eq!(
        client_config["operator_token_file"].as_str(),
        Some("operator.token")
    );
    assert_eq!(
        client_config["endpoints"]["5070"].as_str(),
        Some("127.0.0.1:7202")
    );
    let token = std::fs::read_to_string(fleet_dir.join("operator.token")).unwrap();
    assert_eq!(token.trim().len(), 64);
    assert!(token.trim().chars().all(|c| c.is_ascii_hexdigit()));

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mut secrets = vec![fleet_dir.join("ca.key"), fleet_dir.join("operator.token")];
        for name in NODES {
            secrets.push(fleet_dir.join(name).join("node.key"));
            secrets.push(fleet_dir.join(name).join("agent.token"));
        }
        for secret in secrets {
            let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", secret.display());
        }
    }

    // A second init into the same directory is refused and changes nothing.
    let ca_before = std::fs::read(fleet_dir.join("ca.pem")).unwrap();
    let again = fleetctl(&["init", "--dir", fleet_arg, "--nodes", "beast"]);
    assert!(!again.status.success());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("already holds a fleet"), "{stderr}");
    assert_eq!(std::fs::read(fleet_dir.join("ca.pem")).unwrap(), ca_before);
}

#[test]
fn init_refuses_bad_arguments_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let fleet_dir = dir.path().join("fleet");
    let fleet_arg = fleet_dir.to_str().unwrap();
    for (nodes, expected) in [("beast,Beast", "Beast"), ("beast,beast", "twice")] {
        let output = fleetctl(&["init", "--dir", fleet_arg, "--nodes", nodes]);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{nodes}: {stderr}");
    }
    let output = fleetctl(&[
        "init", "--dir", fleet_arg, "--nodes", "beast", "--host", "0.0.0.0",
    ]);
    assert!(!output.status.success());
    assert!(!fleet_dir.exists(), "nothing is written on bad arguments");
}
