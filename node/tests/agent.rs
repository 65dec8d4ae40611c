//! Asking the local agent (SPEC A1): the request built from the replicated
//! deliberation, the `[agent]` config, and each adapter against real processes and
//! a real HTTP server on 127.0.0.1.
//!
//! The canned gateway replies under `tests/fixtures/openai/` follow the documented
//! shape of OpenAI's `chat.completion` object and error object (id, object, created,
//! model, choices[].message.tool_calls, finish_reason, usage); they were written from
//! the API reference, not captured from a live gateway.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use fleet_node::agent::{
    AgentAdapter, AgentAnswer, AgentConfig, AgentError, InputRequest, RequestPhase, ask,
};
use fleet_node::config::SecretToken;
use fleet_node::state::deliberation::Phase;
use fleet_node::state::{Confidence, DeliberationId, Request};
use serde::Deserialize;
use serde_json::Value;
use support::{MINUTE, START_MS, TestFleet, as_node, node};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

const TOPIC: &str = "Should we migrate to Azure or AWS for email security?";
const GATEWAY_TOKEN: &str = "gateway-token-4f1c9a7e2b";

// ---- InputRequest ----

/// A fleet whose deliberation has options and where all three gave round-1
/// positions, so it is in round 2.
fn fleet_in_round_two() -> (TestFleet, DeliberationId) {
    let mut fleet = TestFleet::new();
    let id = fleet.open_with(TOPIC, |open| {
        open.options = vec!["AWS".into(), "Azure".into()];
    });
    for (who, stance, concern) in [
        ("beast", "Azure", "tenant migration effort"),
        ("5070", "AWS", "SES reputation warm-up"),
        ("mac", "AWS", "cost of Defender licences"),
    ] {
        let mut submission = fleet.submission(stance);
        submission.confidence = Confidence::Medium;
        submission.concerns = vec![concern.into()];
        fleet
            .run(
                as_node(who),
                Request::Submit {
                    deliberation: id,
                    submission,
                },
            )
            .unwrap();
    }
    (fleet, id)
}

#[test]
fn the_round_one_request_has_the_question_and_the_seed_instructions() {
    let mut fleet = TestFleet::new();
    let id = fleet.open(TOPIC);
    let request = InputRequest::new(fleet.deliberation(id), &node("5070"), START_MS + 15_000);
    assert_eq!(request.deliberation, id.to_string());
    assert!(request.deliberation.starts_with("d-"));
    assert_eq!(request.topic, TOPIC);
    assert_eq!(request.tier, 1);
    assert!(request.options.is_empty(), "free text");
    assert_eq!(request.node, node("5070"));
    assert_eq!(
        request.participants,
        [node("beast"), node("5070"), node("mac")]
    );
    assert_eq!(request.phase, RequestPhase::Positions);
    assert_eq!(request.round, Some(1));
    assert_eq!(request.deadline_ms, START_MS + MINUTE);
    assert_eq!(request.time_left_ms, MINUTE - 15_000);
    assert!(request.inputs.is_empty());
    for words in ["1-2 sentences", "confidence", "concerns"] {
        assert!(
            request.instructions.contains(words),
            "{}",
            request.instructions
        );
    }
}

#[test]
fn the_round_two_request_carries_the_others_round_one_positions() {
    let (fleet, id) = fleet_in_round_two();
    let deliberation = fleet.deliberation(id);
    assert_eq!(deliberation.phase, Phase::Synthesis);
    let request = InputRequest::new(deliberation, &node("beast"), START_MS + 1_000);
    assert_eq!(request.phase, RequestPhase::Synthesis);
    assert_eq!(request.round, Some(2));
    assert_eq!(request.options, ["AWS", "Azure"]);
    assert!(
        request
            .instructions
            .contains("other participants' concerns")
    );
    assert!(request.instructions.contains("one of the options"));

    let others: Vec<_> = request.inputs_of_others().collect();
    assert_eq!(others.len(), 2);
    assert_eq!(
        (
            others[0].node.as_str(),
            others[0].phase,
            others[0].stance.as_str()
        ),
        ("5070", RequestPhase::Positions, "AWS")
    );
    assert_eq!(others[0].concerns, ["SES reputation warm-up"]);
    assert_eq!(others[1].node, node("mac"));
    assert_eq!(others[1].confidence, Confidence::Medium);
    assert_eq!(
        request.inputs.len(),
        3,
        "its own round-1 position is there too"
    );

    let json: Value = serde_json::to_value(&request).unwrap();
    assert_eq!(json["phase"], "synthesis");
    assert_eq!(json["round"], 2);
    assert_eq!(json["tier"], 1);
    assert_eq!(json["inputs"][1]["phase"], "positions");
    assert_eq!(json["inputs"][1]["confidence"], "medium");
    assert_eq!(json["inputs"][1]["node"], "5070");
}

#[test]
fn the_decision_request_has_no_round_and_asks_to_converge() {
    let (mut fleet, id) = fleet_in_round_two();
    for (who, stance) in [("beast", "Azure"), ("5070", "AWS"), ("mac", "AWS")] {
        fleet.submit(who, id, stance).unwrap();
    }
    let deliberation = fleet.deliberation(id);
    assert_eq!(deliberation.phase, Phase::Decision);
    let request = InputRequest::new(deliberation, &node("mac"), START_MS);
    assert_eq!(request.phase, RequestPhase::Decision);
    assert_eq!(request.round, None);
    assert!(request.instructions.contains("converge"));
    assert_eq!(request.inputs.len(), 6);
    let json: Value = serde_json::to_value(&request).unwrap();
    assert_eq!(json["round"], Value::Null);
    assert_eq!(json["phase"], "decision");
}

// ---- AgentAnswer ----

#[test]
fn an_answer_takes_any_case_of_confidence_and_the_options_spelling() {
    let answer: AgentAnswer = serde_json::from_str(
        r#"{"stance":" azure. ","confidence":"HIGH","summary":" Azure fits. ","concerns":["", " cost "]}"#,
    )
    .unwrap();
    assert_eq!(answer.confidence, Confidence::High);
    let options = vec!["AWS".to_string(), "Azure".to_string()];
    let answer = answer.validated(&options).unwrap();
    assert_eq!(answer.stance, "Azure");
    assert_eq!(answer.summary, "Azure fits.");
    assert_eq!(answer.concerns, ["cost"]);

    let unsure = serde_json::from_str::<AgentAnswer>(
        r#"{"stance":"AWS","confidence":"maybe","summary":"s"}"#,
    )
    .unwrap_err();
    assert!(unsure.to_string().contains("maybe"), "{unsure}");
}

#[test]
fn an_answer_outside_the_options_or_without_text_is_malformed() {
    let options = vec!["AWS".to_string(), "Azure".to_string()];
    let answer = |stance: &str, summary: &str| AgentAnswer {
        stance: stance.into(),
        confidence: Confidence::Low,
        summary: summary.into(),
        concerns: vec![],
    };
    let error = answer("GCP", "cheaper").validated(&options).unwrap_err();
    assert!(
        matches!(&error, AgentError::Malformed { reason } if reason.contains("GCP") && reason.contains("AWS, Azure")),
        "{error}"
    );
    assert!(error.to_string().contains("abstains"), "{error}");
    let error = answer("  ", "why").validated(&[]).unwrap_err();
    assert!(error.to_string().contains("stance"), "{error}");
    let error = answer("GCP", "").validated(&[]).unwrap_err();
    assert!(error.to_string().contains("summary"), "{error}");
    assert_eq!(
        answer("GCP", "cheaper").validated(&[]).unwrap().stance,
        "GCP",
        "free text takes any stance"
    );
}

// ---- command adapter ----

/// A request for `beast` in round 1 of a deliberation with options.
fn round_one_request() -> InputRequest {
    let mut fleet = TestFleet::new();
    let id = fleet.open_with(TOPIC, |open| {
        open.options = vec!["AWS".into(), "Azure".into()];
    });
    InputRequest::new(fleet.deliberation(id), &node("beast"), START_MS)
}

/// Asks the agent of `config` for round 1 (10 s to answer) and returns why it gave
/// no input.
async fn refusal_in_round_one(config: &AgentConfig) -> AgentError {
    ask(
        config,
        &reqwest::Client::new(),
        &round_one_request(),
        Duration::from_secs(10),
    )
    .await
    .unwrap_err()
}

/// Writes `body` as `agent.sh` in `dir` and returns a command config running it
/// with `sh` (found in PATH, as a bare program name is).
fn command_agent(dir: &Path, body: &str) -> AgentConfig {
    let script = dir.join("agent.sh");
    std::fs::write(&script, body).unwrap();
    AgentConfig {
        adapter: AgentAdapter::Command,
        workspace: dir.join("workspace"),
        command: Some(vec!["sh".into(), script.to_string_lossy().into_owned()]),
        ..AgentConfig::default()
    }
}

#[tokio::test]
async fn a_command_agent_reads_the_request_and_its_answer_is_parsed() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let config = command_agent(
        dir.path(),
        r#"
here=$(dirname "$0")
cat > "$here/request.json"
printf '%s %s %s' "$FLEET_DELIBERATION" "$FLEET_NODE" "$FLEET_PHASE" > "$here/env.txt"
printf '\n  {"stance": "azure", "confidence": "Medium", "summary": "Azure fits our M365 tenants.", "concerns": ["licence cost"]}\n\n'
"#,
    );
    let request = round_one_request();
    let answer = ask(
        &config,
        &reqwest::Client::new(),
        &request,
        Duration::from_secs(10),
    )
    .await?;
    assert_eq!(
        answer,
        AgentAnswer {
            stance: "Azure".into(),
            confidence: Confidence::Medium,
            summary: "Azure fits our M365 tenants.".into(),
            concerns: vec!["licence cost".into()],
        }
    );

    let received: InputRequest =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("request.json"))?)?;
    assert_eq!(received, request);
    assert_eq!(received.topic, TOPIC);
    assert_eq!(received.phase, RequestPhase::Positions);
    let env = std::fs::read_to_string(dir.path().join("env.txt"))?;
    assert_eq!(env, format!("{} beast positions", request.deliberation));
    Ok(())
}

#[tokio::test]
async fn a_command_program_with_a_slash_runs_from_the_config_directory() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("agent.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho '{\"stance\":\"AWS\",\"confidence\":\"low\",\"summary\":\"SES is enough.\"}'\n",
    )?;
    make_executable(&script)?;
    let mut config = parse_agent(
        r#"
adapter = "command"
command = ["./agent.sh"]
"#,
    )?;
    config.resolve_against(dir.path())?;
    config.validate()?;
    assert_eq!(
        config.command,
        Some(vec![script.to_string_lossy().into_owned()])
    );
    assert_eq!(config.workspace, dir.path().join("workspace"));
    assert_eq!(config.memory_dir(), dir.path().join("workspace/memory"));

    let answer = ask(
        &config,
        &reqwest::Client::new(),
        &round_one_request(),
        Duration::from_secs(10),
    )
    .await?;
    assert_eq!(answer.stance, "AWS");
    assert_eq!(answer.confidence, Confidence::Low);
    assert!(answer.concerns.is_empty(), "concerns may be left out");
    Ok(())
}

#[tokio::test]
async fn a_command_printing_garbage_is_malformed() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let config = command_agent(
        dir.path(),
        "cat > /dev/null\necho 'I think Azure, mostly.'\n",
    );
    let error = refusal_in_round_one(&config).await;
    let AgentError::Malformed { reason } = &error else {
        panic!("expected Malformed, got {error:?}");
    };
    assert!(reason.contains("I think Azure, mostly."), "{reason}");
    assert!(error.to_string().contains("abstains"), "{error}");
    Ok(())
}

#[tokio::test]
async fn a_command_answering_outside_the_options_is_malformed() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let config = command_agent(
        dir.path(),
        r#"echo '{"stance":"GCP","confidence":"high","summary":"Cheaper.","concerns":[]}'"#,
    );
    let error = refusal_in_round_one(&config).await;
    assert!(
        matches!(&error, AgentError::Malformed { reason } if reason.contains("GCP")),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_command_exiting_non_zero_fails_with_its_last_stderr_line() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let config = command_agent(
        dir.path(),
        "echo 'loading model' >&2\necho 'model quota exceeded' >&2\necho '{}'\nexit 2\n",
    );
    let error = refusal_in_round_one(&config).await;
    let AgentError::Failed { reason } = &error else {
        panic!("expected Failed, got {error:?}");
    };
    assert!(reason.contains("model quota exceeded"), "{reason}");
    assert!(
        !reason.contains("loading model"),
        "only the last line: {reason}"
    );
    assert!(reason.contains('2'), "names the exit status: {reason}");
    Ok(())
}

#[tokio::test]
async fn a_command_that_cannot_start_fails_naming_it() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let missing = dir.path().join("no-such-agent");
    let config = AgentConfig {
        adapter: AgentAdapter::Command,
        command: Some(vec![missing.to_string_lossy().into_owned()]),
        ..AgentConfig::default()
    };
    let error = refusal_in_round_one(&config).await;
    assert!(
        matches!(&error, AgentError::Failed { reason } if reason.contains("no-such-agent")),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_slow_command_is_killed_and_reported_late() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let config = command_agent(
        dir.path(),
        "echo started > \"$(dirname \"$0\")/started\"\nsleep 5\necho '{}'\n",
    );
    let started = Instant::now();
    let error = ask(
        &config,
        &reqwest::Client::new(),
        &round_one_request(),
        Duration::from_millis(300),
    )
    .await
    .unwrap_err();
    assert_eq!(error, AgentError::Late { waited_ms: 300 });
    assert!(error.to_string().contains("300 ms"), "{error}");
    // Far below the script's 5 s: the call gave up at its wait instead of at the end.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "took {:?}",
        started.elapsed()
    );
    assert!(dir.path().join("started").exists(), "the script did run");
    Ok(())
}

#[tokio::test]
async fn the_manual_adapter_asks_nobody() {
    let error = ask(
        &AgentConfig::default(),
        &reqwest::Client::new(),
        &round_one_request(),
        Duration::from_secs(10),
    )
    .await
    .unwrap_err();
    assert_eq!(error, AgentError::Manual);
    assert!(error.to_string().contains("fleetctl position"), "{error}");
}

// ---- openai adapter, against a local HTTP server ----

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/openai")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One HTTP request as the server received it.
struct Received {
    head: String,
    body: Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then_some(value.trim())
        })
    }
}

/// Reads one HTTP/1.1 request: the head up to the blank line, then
/// `Content-Length` bytes of body.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Result<Received> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await?;
        anyhow::ensure!(n > 0, "the client closed before the end of the head");
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buffer[..head_end].to_vec())?;
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let n = stream.read(&mut chunk).await?;
        anyhow::ensure!(n > 0, "the client closed before the end of the body");
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buffer[head_end..head_end + length])?;
    Ok(Received { head, body })
}

/// A server on 127.0.0.1 that answers one request with `status` and `body`, and
/// hands back what it received.
async fn gateway_replying(
    status: &'static str,
    body: String,
) -> Result<(SocketAddr, JoinHandle<Result<Received>>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await?;
        let received = read_request(&mut stream).await?;
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await?;
        Ok(received)
    });
    Ok((address, server))
}

/// An openai config for the gateway at `address`, resolved against a temp dir that
/// holds the token file.
fn openai_agent(dir: &Path, address: SocketAddr) -> Result<AgentConfig> {
    std::fs::write(dir.join("gateway.token"), format!("{GATEWAY_TOKEN}\n"))?;
    let mut config = parse_agent(&format!(
        r#"
adapter = "openai"
url = "http://{address}/v1/chat/completions"
model = "openclaw"
token_file = "gateway.token"
answer_margin_ms = 1500
"#
    ))?;
    config.resolve_against(dir)?;
    config.validate()?;
    Ok(config)
}

#[tokio::test]
async fn the_gateway_is_asked_with_a_forced_tool_call_and_its_arguments_parsed() -> Result<()> {
    let (address, server) =
        gateway_replying("200 OK", fixture("chat_completion_tool_call.json")).await?;
    let dir = tempfile::tempdir()?;
    let config = openai_agent(dir.path(), address)?;
    let (fleet, id) = fleet_in_round_two();
    let request = InputRequest::new(fleet.deliberation(id), &node("beast"), START_MS + 1_000);

    let answer = ask(
        &config,
        &reqwest::Client::new(),
        &request,
        Duration::from_secs(10),
    )
    .await?;
    assert_eq!(
        answer,
        AgentAnswer {
            stance: "AWS".into(),
            confidence: Confidence::High,
            summary: "AWS SES with DKIM and DMARC covers our mail; the team already runs it."
                .into(),
            concerns: vec!["SES reputation warm-up".into()],
        }
    );

    let received = server.await??;
    assert!(
        received
            .head
            .starts_with("POST /v1/chat/completions HTTP/1.1"),
        "{}",
        received.head
    );
    assert_eq!(
        received.header("authorization"),
        Some(format!("Bearer {GATEWAY_TOKEN}").as_str())
    );
    let body = &received.body;
    assert_eq!(body["model"], "openclaw");
    assert_eq!(body["messages"][0]["role"], "system");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("beast") && system.contains("submit_position"),
        "{system}"
    );
    assert_eq!(body["messages"][1]["role"], "user");
    let user = body["messages"][1]["content"].as_str().unwrap();
    for expected in [
        TOPIC,
        "synthesis",
        "AWS | Azure",
        "5070, positions: AWS",
        "SES reputation warm-up",
        "beast (you)",
        "\"deliberation\":",
    ] {
        assert!(
            user.contains(expected),
            "`{expected}` missing from:\n{user}"
        );
    }
    let tool = &body["tools"][0];
    assert_eq!(tool["type"], "function");
    assert_eq!(tool["function"]["name"], "submit_position");
    let parameters = &tool["function"]["parameters"];
    assert_eq!(
        parameters["properties"]["stance"]["enum"],
        serde_json::json!(["AWS", "Azure"])
    );
    assert_eq!(
        parameters["properties"]["confidence"]["enum"],
        serde_json::json!(["low", "medium", "high"])
    );
    assert_eq!(parameters["properties"]["concerns"]["type"], "array");
    assert_eq!(
        body["tool_choice"],
        serde_json::json!({"type": "function", "function": {"name": "submit_position"}})
    );
    Ok(())
}

#[tokio::test]
async fn a_model_that_only_replies_in_text_is_malformed() -> Result<()> {
    let (address, server) =
        gateway_replying("200 OK", fixture("chat_completion_text_only.json")).await?;
    let dir = tempfile::tempdir()?;
    let config = openai_agent(dir.path(), address)?;
    let error = refusal_in_round_one(&config).await;
    let AgentError::Malformed { reason } = &error else {
        panic!("expected Malformed, got {error:?}");
    };
    assert!(
        reason.contains("the model did not call submit_position"),
        "{reason}"
    );
    assert!(reason.contains("I would go with AWS"), "{reason}");
    server.await??;
    Ok(())
}

#[tokio::test]
async fn a_gateway_refusing_the_token_fails_naming_401() -> Result<()> {
    let (address, server) =
        gateway_replying("401 Unauthorized", fixture("error_invalid_api_key.json")).await?;
    let dir = tempfile::tempdir()?;
    let config = openai_agent(dir.path(), address)?;
    let error = refusal_in_round_one(&config).await;
    let AgentError::Failed { reason } = &error else {
        panic!("expected Failed, got {error:?}");
    };
    assert!(reason.contains("401"), "{reason}");
    assert!(reason.contains("Incorrect API key"), "{reason}");
    server.await??;
    Ok(())
}

#[tokio::test]
async fn a_gateway_that_never_answers_is_late() -> Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let silent = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await?;
        let received = read_request(&mut stream).await?;
        // Hold the connection open without a word, as a stuck model would.
        tokio::time::sleep(Duration::from_secs(30)).await;
        anyhow::Ok(received)
    });
    let dir = tempfile::tempdir()?;
    let config = openai_agent(dir.path(), address)?;
    let started = Instant::now();
    let error = ask(
        &config,
        &reqwest::Client::new(),
        &round_one_request(),
        Duration::from_millis(300),
    )
    .await
    .unwrap_err();
    assert_eq!(error, AgentError::Late { waited_ms: 300 });
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    silent.abort();
    Ok(())
}

#[tokio::test]
async fn an_unreachable_gateway_fails_naming_its_url() -> Result<()> {
    // Bound and dropped at once: nothing listens on the port any more.
    let address = TcpListener::bind("127.0.0.1:0").await?.local_addr()?;
    let dir = tempfile::tempdir()?;
    let config = openai_agent(dir.path(), address)?;
    let error = refusal_in_round_one(&config).await;
    assert!(
        matches!(&error, AgentError::Failed { reason } if reason.contains(&address.to_string())),
        "{error:?}"
    );
    Ok(())
}

// ---- config ----

#[derive(Deserialize)]
struct NodeFile {
    #[serde(default)]
    agent: AgentConfig,
}

fn parse_agent(table: &str) -> Result<AgentConfig> {
    Ok(toml::from_str::<NodeFile>(&format!("[agent]\n{table}"))?.agent)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

const EXAMPLE: &str = r#"
[agent]
adapter = "command"          # manual (default: wait for `fleetctl position`) | command | openai
workspace = "workspace"       # the agent's workspace; notes go to <workspace>/memory/ (default "workspace")
command = ["/usr/local/bin/fleet-agent", "--fast"]   # adapter = command: program and args (no shell)
url = "http://127.0.0.1:18789/v1/chat/completions"   # adapter = openai: the gateway's endpoint
model = "openclaw"            # adapter = openai
token_file = "gateway.token"  # adapter = openai: bearer token file
answer_margin_ms = 2000       # stop waiting this long before the phase deadline (default 2000)
"#;

#[test]
fn the_documented_example_parses_and_keys_of_another_adapter_are_refused() {
    let config = toml::from_str::<NodeFile>(EXAMPLE).unwrap().agent;
    assert_eq!(config.adapter, AgentAdapter::Command);
    assert_eq!(config.workspace, PathBuf::from("workspace"));
    assert_eq!(
        config.command,
        Some(vec!["/usr/local/bin/fleet-agent".into(), "--fast".into()])
    );
    assert_eq!(
        config.url.as_deref(),
        Some("http://127.0.0.1:18789/v1/chat/completions")
    );
    assert_eq!(config.model.as_deref(), Some("openclaw"));
    assert_eq!(config.token_file, Some(PathBuf::from("gateway.token")));
    assert_eq!(config.answer_margin_ms, 2000);
    // The example lists every key; one adapter uses only its own.
    let error = config.validate().unwrap_err();
    assert_eq!(error.key(), "agent.url");
    assert!(error.to_string().contains("openai"), "{error}");
}

#[test]
fn without_an_agent_table_the_node_is_manual() {
    let config = toml::from_str::<NodeFile>("").unwrap().agent;
    assert_eq!(config, AgentConfig::default());
    assert_eq!(config.adapter, AgentAdapter::Manual);
    assert_eq!(config.workspace, PathBuf::from("workspace"));
    assert_eq!(config.answer_margin_ms, 2000);
    config.validate().unwrap();
}

#[test]
fn unknown_keys_and_adapters_are_refused_when_parsing() {
    let error = parse_agent("adapter = \"command\"\nshell = true").unwrap_err();
    assert!(error.to_string().contains("shell"), "{error}");
    let error = parse_agent("adapter = \"ssh\"").unwrap_err();
    assert!(error.to_string().contains("ssh"), "{error}");
}

#[test]
fn each_invalid_agent_config_is_refused_naming_its_key() {
    let cases = [
        ("adapter = \"command\"", "agent.command", "required"),
        (
            "adapter = \"command\"\ncommand = []",
            "agent.command",
            "program",
        ),
        (
            "adapter = \"command\"\ncommand = [\"\"]",
            "agent.command",
            "program",
        ),
        (
            "adapter = \"command\"\ncommand = [\"agent\"]\nmodel = \"openclaw\"",
            "agent.model",
            "openai",
        ),
        (
            "adapter = \"openai\"\ncommand = [\"agent\"]\nurl = \"http://127.0.0.1:1/v1\"",
            "agent.command",
            "adapter = \"command\"",
        ),
        ("url = \"http://127.0.0.1:1/v1\"", "agent.url", "openai"),
        ("adapter = \"openai\"", "agent.url", "required"),
        (
            "adapter = \"openai\"\nurl = \"ftp://gateway/v1\"\nmodel = \"m\"",
            "agent.url",
            "http",
        ),
        (
            "adapter = \"openai\"\nurl = \"not a url\"\nmodel = \"m\"",
            "agent.url",
            "http",
        ),
        (
            "adapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"",
            "agent.model",
            "required",
        ),
        (
            "adapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"",
            "agent.token_file",
            "required",
        ),
        (
            "answer_margin_ms = 30001",
            "agent.answer_margin_ms",
            "30000",
        ),
    ];
    for (table, key, words) in cases {
        let config = parse_agent(table).unwrap();
        let error = config
            .validate()
            .expect_err(&format!("`{table}` should be refused"));
        assert_eq!(error.key(), key, "{table}: {error}");
        assert!(
            error.to_string().contains(words),
            "{table}: `{error}` should say `{words}`"
        );
    }
    parse_agent("answer_margin_ms = 30000")
        .unwrap()
        .validate()
        .unwrap();
}

#[test]
fn the_gateway_token_is_read_trimmed_and_a_missing_or_empty_file_is_refused() -> Result<()> {
    let table = "adapter = \"openai\"\nurl = \"https://gateway.example/v1/chat/completions\"\nmodel = \"openclaw\"\ntoken_file = \"secrets/gateway.token\"";
    let dir = tempfile::tempdir()?;

    let error = parse_agent(table)?.resolve_against(dir.path()).unwrap_err();
    assert_eq!(error.key(), "agent.token_file");
    assert!(error.to_string().contains("gateway.token"), "{error}");

    std::fs::create_dir(dir.path().join("secrets"))?;
    std::fs::write(dir.path().join("secrets/gateway.token"), "  \n")?;
    let error = parse_agent(table)?.resolve_against(dir.path()).unwrap_err();
    assert_eq!(error.key(), "agent.token_file");
    assert!(error.to_string().contains("empty"), "{error}");

    let unresolved = parse_agent(table)?;
    assert_eq!(
        unresolved.validate().unwrap_err().key(),
        "agent.token_file",
        "a token that was never read is refused"
    );

    std::fs::write(
        dir.path().join("secrets/gateway.token"),
        format!("\n{GATEWAY_TOKEN}\n"),
    )?;
    let mut config = parse_agent(table)?;
    config.resolve_against(dir.path())?;
    config.validate()?;
    assert_eq!(config.token, Some(SecretToken::new(GATEWAY_TOKEN)));
    assert_eq!(config.token.as_ref().unwrap().expose(), GATEWAY_TOKEN);
    assert_eq!(
        config.token_file,
        Some(dir.path().join("secrets/gateway.token"))
    );
    assert!(
        !format!("{config:?}").contains(GATEWAY_TOKEN),
        "Debug never shows the token"
    );
    Ok(())
}
