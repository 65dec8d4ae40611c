//! Messages relayed to an agent session on another machine (SPEC S1), by real
//! `fleetd` processes: `fleetctl send` on one node, the owning node's gateway hook a
//! real local HTTP server, and the sender told `delivered`, `queued` or `failed`.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::notify::WebhookReceiver;
use fleet_node::state::Request;
use fleet_node::state::relay::{MessageId, MessageStatus};
use fleet_tests::ProcessFleet;

const NODES: [&str; 3] = ["beast", "5070", "mac"];
/// A generous safety bound for an election or a retry.
const BOUND: Duration = Duration::from_secs(45);
const HOOK_TOKEN: &str = "gateway-hook-token-5070";

/// Points `node`'s gateway hook at `url`, with a bearer token in a file.
fn configure_gateway(fleet: &ProcessFleet, node: &str, url: &str) -> Result<()> {
    let path = fleet.config_path(node);
    let dir = path.parent().expect("a config file has a directory");
    std::fs::write(dir.join("hook.token"), format!("{HOOK_TOKEN}\n"))?;
    let mut config = std::fs::read_to_string(&path)?;
    config.push_str(&format!(
        "\n[gateway]\nhook_url = \"{url}\"\ntoken_file = \"hook.token\"\ntimeout_ms = 2000\n"
    ));
    std::fs::write(&path, config)?;
    Ok(())
}

async fn start_fleet(gateways: &[(&str, String)]) -> Result<ProcessFleet> {
    let mut fleet = ProcessFleet::init(&NODES)?;
    for (node, url) in gateways {
        configure_gateway(&fleet, node, url)?;
    }
    fleet.start_all()?;
    fleet.bootstrap("beast")?;
    fleet.wait_for_status("beast primary", BOUND, |status| {
        status["primary"] == "beast"
    })?;
    Ok(fleet)
}

/// Publishes `key` as a session of `node` with agent `main`.
async fn publish_session(fleet: &ProcessFleet, node: &str, key: &str) -> Result<()> {
    let mut client = fleet.client(node).await?;
    let request = Request::PublishSession {
        key: key.into(),
        agent: Some("main".into()),
        status: "idle".into(),
    };
    client.write(&request, true).await?.0?;
    Ok(())
}

/// `fleetctl --node FROM send --to SESSION MESSAGE -o json`: its exit status and report.
fn send(
    fleet: &ProcessFleet,
    from: &str,
    to: &str,
    message: &str,
) -> Result<(bool, serde_json::Value)> {
    let output = fleet.fleetctl(&["--node", from, "send", "--to", to, message, "-o", "json"])?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| serde_json::json!({ "error": stderr }));
    Ok((output.status.success(), report))
}

fn message_id(report: &serde_json::Value) -> Result<MessageId> {
    let Some(id) = report["id"].as_str().and_then(|id| id.strip_prefix("m-")) else {
        bail!("no message id in {report}");
    };
    Ok(MessageId(id.parse()?))
}

/// Reads message `id` through `node` until `done` holds.
async fn wait_for_message(
    fleet: &ProcessFleet,
    node: &str,
    id: MessageId,
    done: impl Fn(&MessageStatus) -> bool,
) -> Result<MessageStatus> {
    let deadline = Instant::now() + BOUND;
    let mut last = String::new();
    while Instant::now() < deadline {
        let mut client = fleet.client(node).await?;
        match client.read(&Query::Message { id }, true, 0).await {
            Ok(QueryAnswer::Message(message)) if done(&message.status) => {
                return Ok(message.status);
            }
            Ok(other) => last = format!("{other:?}"),
            Err(error) => last = error.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!("message {id}: not as expected within {BOUND:?}; last: {last}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_reaches_the_owners_gateway_hook_or_is_refused_with_the_reason() -> Result<()> {
    let hook = WebhookReceiver::start("127.0.0.1:0".parse()?).await?;
    let fleet = start_fleet(&[("5070", hook.url())]).await?;
    publish_session(&fleet, "5070", "5070-main").await?;

    // Sent through Beast, owned by 5070: 5070's gateway gets it, Beast hears "delivered".
    let (ok, report) = send(&fleet, "beast", "5070-main", "please rebuild the index")?;
    assert!(ok, "{report}");
    assert_eq!(report["status"], "delivered", "{report}");
    assert_eq!(report["to_node"], "5070", "{report}");
    let received = hook.received();
    assert_eq!(received.len(), 1, "{received:?}");
    let body = received[0].json().expect("the hook gets JSON");
    assert_eq!(body["message"], "please rebuild the index");
    assert_eq!(body["sessionKey"], "5070-main");
    assert_eq!(body["agentId"], "main");
    assert_eq!(body["name"], "fleet: beast");
    assert_eq!(
        received[0].header("authorization"),
        Some(format!("Bearer {HOOK_TOKEN}").as_str())
    );
    let key = received[0].header("idempotency-key").unwrap_or_default();
    assert!(
        key.ends_with(&format!(":{}", message_id(&report)?)),
        "{key}"
    );

    // A gateway that refuses: the sender is told it failed, with the status.
    hook.respond_with(vec![(400, None)]);
    let (ok, report) = send(&fleet, "mac", "5070-main", "malformed for this gateway")?;
    assert!(!ok, "a refused message must fail the command: {report}");
    assert_eq!(report["status"], "failed", "{report}");
    let reason = report["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("400"), "{reason}");
    assert_eq!(hook.received().len(), 2);

    // A session nobody published is refused by name, and nothing reaches a gateway.
    let (ok, report) = send(&fleet, "beast", "nobody-main", "hello?")?;
    assert!(!ok);
    assert!(report.to_string().contains("nobody-main"), "{report}");
    assert_eq!(hook.received().len(), 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_for_a_gateway_that_is_down_is_queued_then_delivered_when_it_returns()
-> Result<()> {
    // A port with nothing listening: mac's gateway is down.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let url = format!("http://127.0.0.1:{port}/hooks/agent");
    let fleet = start_fleet(&[("mac", url)]).await?;
    publish_session(&fleet, "mac", "mac-main").await?;

    let (ok, report) = send(&fleet, "5070", "mac-main", "deploy when you can")?;
    assert!(ok, "a queued message is not an error: {report}");
    assert_eq!(report["status"], "queued", "{report}");
    let reason = report["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("not reachable"), "{reason}");
    let id = message_id(&report)?;

    let inbox = fleet.fleetctl_json(&["--node", "mac", "inbox"])?;
    let held = inbox.as_array().map_or(0, Vec::len);
    assert_eq!(held, 1, "{inbox}");
    assert_eq!(inbox[0]["body"], "deploy when you can");

    // The gateway comes back on its port: mac tries again and delivers, once.
    let hook = WebhookReceiver::start(format!("127.0.0.1:{port}").parse()?).await?;
    let status = wait_for_message(&fleet, "beast", id, |s| *s == MessageStatus::Delivered).await?;
    assert_eq!(status, MessageStatus::Delivered);
    let received = hook.received();
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(
        received[0].json().unwrap()["message"],
        "deploy when you can"
    );
    let inbox = fleet.fleetctl_json(&["--node", "mac", "inbox"])?;
    assert_eq!(inbox.as_array().map_or(usize::MAX, Vec::len), 0, "{inbox}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_for_a_node_that_is_down_is_delivered_when_it_returns() -> Result<()> {
    let hook = WebhookReceiver::start("127.0.0.1:0".parse()?).await?;
    let mut fleet = start_fleet(&[("5070", hook.url())]).await?;
    publish_session(&fleet, "5070", "5070-main").await?;
    fleet.kill("5070")?;

    // The session is still live (its node has not been silent past the session TTL):
    // the message is committed, and nobody can report on it yet.
    let output = fleet.fleetctl(&[
        "--node",
        "beast",
        "send",
        "--to",
        "5070-main",
        "back up the photos",
        "--wait-secs",
        "2",
        "-o",
        "json",
    ])?;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    assert_eq!(report["status"], "sent", "{report}");
    let id = message_id(&report)?;
    assert!(hook.received().is_empty());

    fleet.start("5070")?;
    wait_for_message(&fleet, "beast", id, |s| *s == MessageStatus::Delivered).await?;
    let received = hook.received();
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0].json().unwrap()["message"], "back up the photos");
    Ok(())
}
