//! `fleetctl mcp` against real `fleetd` processes (SPEC A2): the real binary is spawned
//! as an agent gateway would spawn it (`fleetctl --config … --node beast mcp`), and the
//! test speaks MCP to it by hand — newline-delimited JSON-RPC 2.0 on its stdin and
//! stdout — so what is checked is the wire a gateway's MCP client sees: the handshake,
//! the tool list, results as JSON text, and refusals as tool errors that name the field.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::str::FromStr;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fleet_node::api::query::{Query, QueryAnswer};
use fleet_node::state::event_log::EventFilter;
use fleet_node::state::{DeliberationId, Phase};
use fleet_tests::ProcessFleet;
use fleet_tests::process_fleet::binary;
use serde_json::{Value, json};

const NODES: [&str; 3] = ["beast", "5070", "mac"];
/// A generous safety bound for anything that takes an election or a health check.
const BOUND: Duration = Duration::from_secs(30);
/// A protocol version rmcp supports.
const PROTOCOL_VERSION: &str = "2025-06-18";
/// Every tool `fleetctl mcp` promises.
const TOOLS: [&str; 20] = [
    "status",
    "deliberate",
    "deliberation",
    "position",
    "send",
    "sessions",
    "sessions_publish",
    "inbox",
    "events_append",
    "events_list",
    "events_wait",
    "events_ack",
    "artifacts_put",
    "artifacts_get",
    "bulletin_post",
    "bulletin_list",
    "bulletin_ack",
    "capabilities",
    "capabilities_publish",
    "route",
];

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// A `fleetctl mcp` process and the JSON-RPC conversation with it.
struct McpProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Each line the server wrote on stdout, parsed (or the reason it was not JSON).
    lines: Receiver<Result<Value, String>>,
    next_id: u64,
}

impl McpProcess {
    /// `fleetctl --config DIR/fleetctl.toml --node NODE mcp`, its stderr in
    /// `DIR/mcp.stderr`.
    fn spawn(fleet: &ProcessFleet, node: &str) -> Result<Self> {
        let stderr = std::fs::File::create(fleet.dir().join("mcp.stderr"))?;
        let mut child = Command::new(binary("fleetctl"))
            .arg("--config")
            .arg(fleet.dir().join("fleetctl.toml"))
            .args(["--node", node, "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .context("starting fleetctl mcp")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let parsed = serde_json::from_str(&line)
                    .map_err(|e| format!("stdout line is not JSON ({e}): {line}"));
                if sender.send(parsed).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 1,
        })
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let stdin = self.stdin.as_mut().context("stdin already closed")?;
        writeln!(stdin, "{message}")?;
        stdin.flush()?;
        Ok(())
    }

    /// Sends a request and returns its response, skipping the server's notifications;
    /// every line on stdout must be a JSON-RPC 2.0 message.
    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))?;
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .lines
                .recv_timeout(left)
                .with_context(|| format!("no answer to {method} within {BOUND:?}"))?
                .map_err(anyhow::Error::msg)?;
            assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC 2.0: {message}");
            if message["id"] == id {
                return Ok(message);
            }
        }
    }

    /// `tools/call`: the call's result (a tool error included); fails on a JSON-RPC error.
    fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Value> {
        let response = self.request(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )?;
        if !response["error"].is_null() {
            bail!("{name}: JSON-RPC error {}", response["error"]);
        }
        Ok(response["result"].clone())
    }

    /// A successful tool call's JSON answer.
    fn call_ok(&mut self, name: &str, arguments: Value) -> Result<Value> {
        let result = self.call_tool(name, arguments)?;
        if result["isError"] != false {
            bail!("{name} failed: {result}");
        }
        text_json(&result)
    }

    /// Closes stdin, as a gateway does when it is done, and waits for the exit.
    fn close(mut self) -> Result<std::process::ExitStatus> {
        drop(self.stdin.take());
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!("fleetctl mcp did not exit within {BOUND:?} of stdin closing");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for McpProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON in a tool result's first text content.
fn text_json(result: &Value) -> Result<Value> {
    let content = &result["content"][0];
    assert_eq!(content["type"], "text", "not text content: {result}");
    let text = content["text"].as_str().context("no text")?;
    serde_json::from_str(text).with_context(|| format!("the text is not JSON: {text}"))
}

#[test]
fn an_agent_gateway_lists_the_tools_and_acts_as_its_node() -> Result<()> {
    let fleet = ProcessFleet::start_all_healthy(&NODES, BOUND)?;
    let mut mcp = McpProcess::spawn(&fleet, "beast")?;

    let initialized = mcp.request(
        "initialize",
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "fleet-tests", "version": "0" },
        }),
    )?;
    let server = &initialized["result"];
    assert_eq!(server["protocolVersion"], PROTOCOL_VERSION, "{initialized}");
    assert_eq!(server["serverInfo"]["name"], "fleetctl", "{initialized}");
    assert!(server["capabilities"]["tools"].is_object(), "{initialized}");
    mcp.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))?;

    let listed = mcp.request("tools/list", json!({}))?;
    let tools = listed["result"]["tools"]
        .as_array()
        .with_context(|| format!("no tools: {listed}"))?;
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for tool in TOOLS {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
    }
    let deliberate = tools.iter().find(|t| t["name"] == "deliberate").unwrap();
    assert_eq!(
        deliberate["inputSchema"]["required"],
        json!(["topic"]),
        "{deliberate}"
    );

    // `deliberate` answers with the open deliberation at once, opened by beast.
    let opened = mcp.call_ok(
        "deliberate",
        json!({
            "topic": "Which cache should the ranking service use?",
            "tier": 1,
            "options": ["A", "B"],
            "participants": ["beast", "5070", "mac"],
        }),
    )?;
    let id = opened["id"].as_str().context("no id")?.to_string();
    assert_eq!(opened["phase"], "positions", "{opened}");
    assert_eq!(opened["opened_by"], "beast", "{opened}");
    assert_eq!(opened["joined"], false, "{opened}");

    // The event is authored by the node the server acts as.
    let appended = mcp.call_ok(
        "events_append",
        json!({
            "event_type": "task.request",
            "stream": "project/fleet",
            "room": "delegation",
            "body": "Fix the ranking.",
        }),
    )?;
    let event = &appended["event"];
    assert_eq!(event["from"], "beast", "{appended}");
    assert_eq!(event["body"], "Fix the ranking.", "{appended}");
    let event_id = event["id"].as_u64().context("no event id")?;

    // A wait from just before the event returns it at once.
    let waited = mcp.call_ok(
        "events_wait",
        json!({ "since": event_id - 1, "wait_secs": 10, "filter": { "room": "delegation" } }),
    )?;
    assert_eq!(waited["events"][0]["id"], event_id, "{waited}");

    // What the tools did is in the fleet, as another client reads it.
    runtime()?.block_on(async {
        let mut client = fleet.client("mac").await?;
        let deliberation = DeliberationId::from_str(&id)?;
        match client
            .read(&Query::Deliberation { id: deliberation }, true, 0)
            .await?
        {
            QueryAnswer::Deliberation(read) => {
                assert_eq!(read.topic, "Which cache should the ranking service use?");
                assert_eq!(read.phase, Phase::Positions);
            }
            other => bail!("unexpected answer: {other:?}"),
        }
        let events = Query::Events {
            filter: EventFilter::default(),
            since: event_id - 1,
            limit: 1,
        };
        match client.read(&events, true, 0).await? {
            QueryAnswer::Events { events, .. } => {
                assert_eq!(events[0].from, "beast");
                assert_eq!(events[0].event_type, "task.request");
            }
            other => bail!("unexpected answer: {other:?}"),
        }
        Ok(())
    })?;

    // Bad input is a tool error that names the field, not a protocol error.
    let bad_status = mcp.call_tool(
        "events_ack",
        json!({ "event": event_id, "status": "finished" }),
    )?;
    assert_eq!(bad_status["isError"], true, "{bad_status}");
    let refusal = text_json(&bad_status)?;
    assert_eq!(refusal["rule"], "invalid_field", "{refusal}");
    let message = refusal["message"].as_str().unwrap_or_default();
    assert!(message.contains("status"), "{message}");
    assert!(message.contains("finished"), "{message}");

    let missing = mcp.call_tool("events_append", json!({ "event_type": "x", "room": "r" }))?;
    assert_eq!(missing["isError"], true, "{missing}");
    let text = missing["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("stream"), "{text}");

    // A refusal by a fleet rule names the rule.
    let unknown = mcp.call_tool("deliberation", json!({ "id": "d-999" }))?;
    assert_eq!(unknown["isError"], true, "{unknown}");
    assert_eq!(text_json(&unknown)?["rule"], "unknown_deliberation");

    let status = mcp.close()?;
    assert!(status.success(), "fleetctl mcp exited with {status}");
    Ok(())
}
