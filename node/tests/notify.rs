//! Notification delivery against real servers on loopback (SPEC D8): the request each
//! sink kind sends, how statuses and failures become attempts, the command sink, the
//! `[[notify]]` config and its refusals, and the local webhook receiver itself.
//!
//! The server is `WebhookReceiver` on `127.0.0.1:0`; no request leaves the machine.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use fleet_node::config::SecretToken;
use fleet_node::notify::{
    Attempt, ReceivedRequest, SinkConfig, SinkKind, WebhookReceiver, attempt, http_client,
    resolve_all, validate_all,
};
use fleet_node::state::DeliberationId;
use fleet_node::state::outbox::{Notification, NotificationId, NotificationKind};
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const WAIT: Duration = Duration::from_secs(5);
const TOKEN: &str = "sink-token-0123456789";

fn notification() -> Notification {
    Notification {
        id: NotificationId(4),
        kind: NotificationKind::DeliberationStarted,
        deliberation: Some(DeliberationId(1)),
        idempotency_key: "home:d-1:started".to_owned(),
        title: "Fleet deliberation initiated: which backup target?".to_owned(),
        text: "Positions are due in 2 minutes.\nParticipants: beast, 5070, mac.".to_owned(),
        created_at_ms: 1_700_000_000_000,
        deliveries: BTreeMap::new(),
    }
}

async fn receiver() -> WebhookReceiver {
    WebhookReceiver::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

fn webhook(name: &str, url: String, token: Option<&str>) -> SinkConfig {
    SinkConfig::new(
        name,
        SinkKind::Webhook {
            url,
            token_file: None,
            token: token.map(SecretToken::new),
        },
    )
    .with_timeout_ms(5_000)
}

// ---- request shapes -------------------------------------------------------------

#[tokio::test]
async fn ntfy_posts_the_text_to_the_topic_with_title_tags_key_and_token() {
    let server = receiver().await;
    let sink = SinkConfig::new(
        "phone",
        SinkKind::Ntfy {
            url: server.url(),
            topic: "fleet-ops".to_owned(),
            token_file: None,
            token: Some(SecretToken::new(TOKEN)),
        },
    );
    let note = notification();

    assert_eq!(
        attempt(&sink, &note, &http_client()).await,
        Attempt::Delivered
    );

    let received = server.wait_for(1, WAIT).await;
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/fleet-ops");
    assert_eq!(request.body, note.text);
    assert_eq!(request.header("title"), Some(note.title.as_str()));
    assert_eq!(request.header("tags"), Some("fleet"));
    assert_eq!(request.header("idempotency-key"), Some("home:d-1:started"));
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(
        request.header("user-agent"),
        Some(concat!("fleetd/", env!("CARGO_PKG_VERSION")))
    );
    assert!(
        request
            .header("content-type")
            .is_some_and(|value| value.starts_with("text/plain")),
        "{:?}",
        request.headers
    );
}

#[tokio::test]
async fn ntfy_gets_a_non_ascii_title_as_an_rfc_2047_encoded_word() {
    let server = receiver().await;
    let sink = SinkConfig::new(
        "phone",
        SinkKind::Ntfy {
            url: format!("http://{}", server.address()),
            topic: "fleet-ops".to_owned(),
            token_file: None,
            token: None,
        },
    );
    let mut note = notification();
    note.title = "Fleet decision reached: Müllabfuhr — wann?".to_owned();

    assert_eq!(
        attempt(&sink, &note, &http_client()).await,
        Attempt::Delivered
    );

    let request = &server.wait_for(1, WAIT).await[0];
    assert_eq!(request.path, "/fleet-ops", "a URL without `/` works too");
    assert_eq!(request.header("authorization"), None);
    let title = request.header("title").unwrap();
    let encoded = title
        .strip_prefix("=?UTF-8?B?")
        .and_then(|rest| rest.strip_suffix("?="))
        .unwrap_or_else(|| panic!("not an encoded word: {title}"));
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    assert_eq!(String::from_utf8(decoded).unwrap(), note.title);
}

#[tokio::test]
async fn discord_gets_the_title_and_text_in_an_embed_without_mentions() {
    let server = receiver().await;
    let sink = SinkConfig::new("team", SinkKind::Discord { url: server.url() });
    let note = notification();

    assert_eq!(
        attempt(&sink, &note, &http_client()).await,
        Attempt::Delivered
    );

    let request = &server.wait_for(1, WAIT).await[0];
    assert_eq!(request.path, "/");
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("idempotency-key"), Some("home:d-1:started"));
    assert_eq!(
        request.json(),
        Some(json!({
            "embeds": [{ "title": note.title, "description": note.text }],
            "allowed_mentions": { "parse": [] }
        }))
    );
}

#[tokio::test]
async fn discord_gets_a_title_too_long_for_an_embed_title_whole_in_the_description() {
    let server = receiver().await;
    let sink = SinkConfig::new("team", SinkKind::Discord { url: server.url() });
    let mut note = notification();
    note.title = format!("Fleet decision reached: {}", "x".repeat(300));

    assert_eq!(
        attempt(&sink, &note, &http_client()).await,
        Attempt::Delivered
    );

    let body = server.wait_for(1, WAIT).await[0].json().unwrap();
    let embed = &body["embeds"][0];
    assert_eq!(embed.get("title"), None);
    assert_eq!(
        embed["description"],
        json!(format!("**{}**\n\n{}", note.title, note.text))
    );
}

#[tokio::test]
async fn slack_gets_a_bold_title_and_the_text_with_markup_escaped() {
    let server = receiver().await;
    let sink = SinkConfig::new("chat", SinkKind::Slack { url: server.url() });
    let mut note = notification();
    note.text = "Ask <!channel> & decide > 2 options".to_owned();

    assert_eq!(
        attempt(&sink, &note, &http_client()).await,
        Attempt::Delivered
    );

    let request = &server.wait_for(1, WAIT).await[0];
    assert_eq!(request.header("idempotency-key"), Some("home:d-1:started"));
    assert_eq!(
        request.json(),
        Some(json!({
            "text": format!(
                "*{}*\nAsk &lt;!channel&gt; &amp; decide &gt; 2 options",
                note.title
            )
        }))
    );
}

#[tokio::test]
async fn a_webhook_gets_the_generic_json_and_the_bearer_token() {
    let server = receiver().await;
    let sink = webhook("hook", format!("{}hooks/fleet", server.url()), Some(TOKEN));
    let note = notification();

    assert_eq!(
        attempt(&sink, &note, &http_client()).await,
        Attempt::Delivered
    );

    let request = &server.wait_for(1, WAIT).await[0];
    assert_eq!(request.path, "/hooks/fleet");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(request.header("idempotency-key"), Some("home:d-1:started"));
    assert_eq!(
        request.json(),
        Some(json!({
            "id": "n-4",
            "kind": "deliberation_started",
            "deliberation": "d-1",
            "idempotency_key": "home:d-1:started",
            "title": note.title,
            "text": note.text,
            "created_at_ms": 1_700_000_000_000u64,
        }))
    );
}

#[tokio::test]
async fn a_webhook_without_token_sends_no_authorization_and_null_deliberation() {
    let server = receiver().await;
    let sink = webhook("hook", server.url(), None);
    let mut note = notification();
    note.kind = NotificationKind::DeliberationDecided;
    note.deliberation = None;

    assert_eq!(
        attempt(&sink, &note, &http_client()).await,
        Attempt::Delivered
    );

    let request = &server.wait_for(1, WAIT).await[0];
    assert_eq!(request.header("authorization"), None);
    let body = request.json().unwrap();
    assert_eq!(body["kind"], json!("deliberation_decided"));
    assert_eq!(body["deliberation"], json!(null));
}

// ---- statuses and failures --------------------------------------------------------

#[tokio::test]
async fn a_200_is_delivered() {
    let server = receiver().await;
    server.respond_with(vec![(200, None)]);
    let sink = webhook("hook", server.url(), None);
    assert_eq!(
        attempt(&sink, &notification(), &http_client()).await,
        Attempt::Delivered
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_503_with_retry_after_is_retried_after_that_long() {
    let server = receiver().await;
    server.respond_with(vec![(503, Some(2))]);
    let sink = webhook("phone", server.url(), None);

    let outcome = attempt(&sink, &notification(), &http_client()).await;

    let Attempt::Retry { error, retry_after } = outcome else {
        panic!("expected a retry, got {outcome:?}");
    };
    assert_eq!(retry_after, Some(Duration::from_secs(2)));
    assert!(
        error.starts_with("sink phone: HTTP 503 Service Unavailable"),
        "{error}"
    );
}

#[tokio::test]
async fn a_retry_after_of_a_day_is_capped_at_an_hour() {
    let server = receiver().await;
    server.respond_with(vec![(503, Some(86_400))]);
    let sink = webhook("phone", server.url(), None);

    let outcome = attempt(&sink, &notification(), &http_client()).await;

    assert!(
        matches!(outcome, Attempt::Retry { retry_after: Some(wait), .. } if wait == Duration::from_secs(3_600)),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_429_is_retried_and_a_500_without_retry_after_too() {
    let server = receiver().await;
    server.respond_with(vec![(429, None), (500, None)]);
    let sink = webhook("phone", server.url(), None);
    let http = http_client();

    let first = attempt(&sink, &notification(), &http).await;
    let second = attempt(&sink, &notification(), &http).await;

    assert!(
        matches!(&first, Attempt::Retry { error, retry_after: None } if error.contains("HTTP 429 Too Many Requests")),
        "{first:?}"
    );
    assert!(
        matches!(&second, Attempt::Retry { error, retry_after: None } if error.contains("HTTP 500")),
        "{second:?}"
    );
}

#[tokio::test]
async fn a_404_is_permanent() {
    let server = receiver().await;
    server.respond_with(vec![(404, None)]);
    let sink = webhook("phone", server.url(), None);

    let outcome = attempt(&sink, &notification(), &http_client()).await;

    let Attempt::Permanent { error } = outcome else {
        panic!("expected a permanent failure, got {outcome:?}");
    };
    assert!(
        error.starts_with("sink phone: HTTP 404 Not Found"),
        "{error}"
    );
}

#[tokio::test]
async fn a_redirect_is_permanent_and_not_followed() {
    let server = receiver().await;
    server.respond_with(vec![(301, None)]);
    let sink = webhook("phone", server.url(), None);

    let outcome = attempt(&sink, &notification(), &http_client()).await;

    assert!(
        matches!(&outcome, Attempt::Permanent { error } if error.contains("HTTP 301") && error.contains("redirects are not followed")),
        "{outcome:?}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.received().len(), 1, "no second request was made");
}

#[tokio::test]
async fn a_closed_port_is_retried() {
    // Binding and dropping a listener gives a port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sink = webhook("phone", format!("http://127.0.0.1:{port}/"), None);

    let outcome = attempt(&sink, &notification(), &http_client()).await;

    let Attempt::Retry { error, retry_after } = outcome else {
        panic!("expected a retry, got {outcome:?}");
    };
    assert_eq!(retry_after, None);
    assert!(error.starts_with("sink phone: cannot connect"), "{error}");
    assert!(
        !error.contains(&port.to_string()),
        "the URL is not quoted: {error}"
    );
}

#[tokio::test]
async fn a_sink_that_does_not_answer_within_its_timeout_is_retried() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    // Accepts connections and keeps them open without ever answering.
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let sink = webhook("phone", url, None).with_timeout_ms(300);

    let outcome = attempt(&sink, &notification(), &http_client()).await;

    silent.abort();
    assert!(
        matches!(&outcome, Attempt::Retry { error, .. } if error == "sink phone: no answer within 300 ms (timeout_ms)"),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn every_attempt_carries_the_same_idempotency_key() {
    let server = receiver().await;
    server.respond_with(vec![(503, None)]);
    let sink = webhook("phone", server.url(), None);
    let http = http_client();
    let note = notification();

    let first = attempt(&sink, &note, &http).await;
    let second = attempt(&sink, &note, &http).await;

    assert!(matches!(first, Attempt::Retry { .. }), "{first:?}");
    assert_eq!(second, Attempt::Delivered);
    let received = server.wait_for(2, WAIT).await;
    let keys: Vec<_> = received
        .iter()
        .map(|request| request.header("idempotency-key"))
        .collect();
    assert_eq!(keys, [Some("home:d-1:started"), Some("home:d-1:started")]);
    assert_eq!(received[0].body, received[1].body);
}

// ---- the command sink --------------------------------------------------------------

/// A sink running `sh <dir>/<name>.sh`: through `sh` so the script is read, not
/// executed, which avoids "text file busy" when another test forks meanwhile.
fn script_sink(dir: &Path, name: &str, script: &str, timeout_ms: u64) -> SinkConfig {
    let path = dir.join(format!("{name}.sh"));
    std::fs::write(&path, script).unwrap();
    SinkConfig::new(
        name,
        SinkKind::Command {
            program: PathBuf::from("/bin/sh"),
            args: vec![path.display().to_string()],
        },
    )
    .with_timeout_ms(timeout_ms)
}

#[tokio::test]
async fn a_command_exiting_0_is_delivered_and_got_the_json_and_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let stdin_copy = dir.path().join("stdin.json");
    let env_copy = dir.path().join("env.txt");
    let script = format!(
        "cat > '{}'\nprintf '%s\\n%s\\n' \"$FLEET_NOTIFICATION_TITLE\" \"$FLEET_IDEMPOTENCY_KEY\" > '{}'\nexit 0\n",
        stdin_copy.display(),
        env_copy.display()
    );
    let sink = script_sink(dir.path(), "pager", &script, 5_000);
    let note = notification();

    assert_eq!(
        attempt(&sink, &note, &http_client()).await,
        Attempt::Delivered
    );

    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stdin_copy).unwrap()).unwrap();
    assert_eq!(input["id"], json!("n-4"));
    assert_eq!(input["idempotency_key"], json!("home:d-1:started"));
    assert_eq!(input["text"], json!(note.text));
    assert_eq!(
        std::fs::read_to_string(&env_copy).unwrap(),
        format!("{}\nhome:d-1:started\n", note.title)
    );
}

#[tokio::test]
async fn a_command_exiting_3_is_retried_with_the_last_line_of_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let script = "cat > /dev/null\necho 'connecting' >&2\necho 'spool is full' >&2\nexit 3\n";
    let sink = script_sink(dir.path(), "pager", script, 5_000);

    let outcome = attempt(&sink, &notification(), &http_client()).await;

    let Attempt::Retry { error, retry_after } = outcome else {
        panic!("expected a retry, got {outcome:?}");
    };
    assert_eq!(retry_after, None);
    assert!(error.starts_with("sink pager: command failed"), "{error}");
    assert!(error.contains('3'), "{error}");
    assert!(error.ends_with(": spool is full"), "{error}");
    assert!(!error.contains("connecting"), "{error}");
}

#[tokio::test]
async fn a_command_that_runs_past_its_timeout_is_killed_and_retried() {
    let dir = tempfile::tempdir().unwrap();
    let sink = script_sink(dir.path(), "slow", "exec sleep 30\n", 300);
    let started = std::time::Instant::now();

    let outcome = attempt(&sink, &notification(), &http_client()).await;

    let Attempt::Retry { error, .. } = outcome else {
        panic!("expected a retry, got {outcome:?}");
    };
    assert!(error.contains("did not exit within 300 ms"), "{error}");
    assert!(error.starts_with("sink slow:"), "{error}");
    // Generous: only checks it was not waited out (30 s).
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn a_command_that_cannot_start_is_retried_naming_the_program() {
    let sink = SinkConfig::new(
        "pager",
        SinkKind::Command {
            program: PathBuf::from("/nonexistent/fleet-notify"),
            args: Vec::new(),
        },
    );

    let outcome = attempt(&sink, &notification(), &http_client()).await;

    assert!(
        matches!(&outcome, Attempt::Retry { error, .. } if error.starts_with("sink pager: cannot start /nonexistent/fleet-notify")),
        "{outcome:?}"
    );
}

// ---- configuration -----------------------------------------------------------------

#[derive(Debug, Deserialize)]
struct NotifyFile {
    notify: Vec<SinkConfig>,
}

const EXAMPLE: &str = r#"
[[notify]]
name = "phone"          # unique per node
kind = "ntfy"
url = "https://ntfy.sh"
topic = "fleet-ops"
token_file = "ntfy.token"
timeout_ms = 10000

[[notify]]
name = "team"
kind = "discord"
url = "https://discord.com/api/webhooks/1/abc"

[[notify]]
name = "chat"
kind = "slack"
url = "https://hooks.slack.com/services/T/B/x"

[[notify]]
name = "hook"
kind = "webhook"
url = "http://127.0.0.1:8080/fleet"

[[notify]]
name = "local_pager"
kind = "command"
command = ["/usr/local/bin/notify-me", "--flag"]
timeout_ms = 2500
"#;

#[test]
fn the_example_parses_and_validates() {
    let file: NotifyFile = toml::from_str(EXAMPLE).unwrap();
    validate_all(&file.notify).unwrap();
    let sinks = file.notify;
    assert_eq!(sinks.len(), 5);
    assert_eq!(sinks[0].name, "phone");
    assert_eq!(sinks[0].timeout_ms, 10_000);
    assert_eq!(
        sinks[0].kind,
        SinkKind::Ntfy {
            url: "https://ntfy.sh".to_owned(),
            topic: "fleet-ops".to_owned(),
            token_file: Some(PathBuf::from("ntfy.token")),
            token: None,
        }
    );
    assert_eq!(
        sinks[1].kind,
        SinkKind::Discord {
            url: "https://discord.com/api/webhooks/1/abc".to_owned()
        }
    );
    assert_eq!(sinks[2].kind.name(), "slack");
    assert_eq!(
        sinks[3].timeout_ms, 10_000,
        "the default timeout is 10 seconds"
    );
    assert_eq!(
        sinks[4].kind,
        SinkKind::Command {
            program: PathBuf::from("/usr/local/bin/notify-me"),
            args: vec!["--flag".to_owned()],
        }
    );
    assert_eq!(sinks[4].timeout_ms, 2_500);
}

#[test]
fn token_files_and_relative_programs_resolve_against_the_config_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ntfy.token"), format!("  {TOKEN}\n")).unwrap();
    let text = format!(
        "{EXAMPLE}\n[[notify]]\nname = \"near\"\nkind = \"command\"\ncommand = [\"bin/notify\", \"-v\"]\n\n[[notify]]\nname = \"on-path\"\nkind = \"command\"\ncommand = [\"notify-send\"]\n"
    );
    let mut sinks = toml::from_str::<NotifyFile>(&text).unwrap().notify;

    resolve_all(&mut sinks, dir.path()).unwrap();

    let SinkKind::Ntfy {
        token, token_file, ..
    } = &sinks[0].kind
    else {
        panic!("{:?}", sinks[0]);
    };
    assert_eq!(token.as_ref().map(SecretToken::expose), Some(TOKEN));
    assert_eq!(
        token_file.as_deref(),
        Some(dir.path().join("ntfy.token").as_path())
    );
    let programs: Vec<_> = sinks[4..]
        .iter()
        .map(|sink| match &sink.kind {
            SinkKind::Command { program, .. } => program.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        programs,
        [
            PathBuf::from("/usr/local/bin/notify-me"),
            dir.path().join("bin/notify"),
            PathBuf::from("notify-send"),
        ]
    );
}

#[test]
fn a_missing_or_empty_token_file_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut sinks = toml::from_str::<NotifyFile>(EXAMPLE).unwrap().notify;

    let missing = resolve_all(&mut sinks, dir.path()).unwrap_err();
    assert_eq!(missing.key(), "notify[0].token_file");
    assert!(missing.to_string().contains("cannot read"), "{missing}");

    std::fs::write(dir.path().join("ntfy.token"), " \n").unwrap();
    let mut one = toml::from_str::<NotifyFile>(EXAMPLE)
        .unwrap()
        .notify
        .remove(0);
    let empty = one.resolve_against(dir.path()).unwrap_err();
    assert_eq!(empty.key(), "notify.phone.token_file");
    assert!(empty.to_string().contains("is empty"), "{empty}");
}

/// A valid first sink, so that every refusal below is about `notify[1]`.
const FIRST: &str = "[[notify]]\nname = \"ok\"\nkind = \"slack\"\nurl = \"https://hooks.slack.com/x\"\n\n[[notify]]\n";

#[test]
fn each_invalid_sink_is_refused_naming_its_key_and_what_is_allowed() {
    let long_name = format!(
        "name = \"{}\"\nkind = \"discord\"\nurl = \"https://d.example/x\"",
        "a".repeat(65)
    );
    let cases = [
        (
            "name = \"\"\nkind = \"discord\"\nurl = \"https://d.example/x\"",
            "notify[1].name",
            "1 to 64 lowercase letters",
        ),
        (
            "name = \"Phone\"\nkind = \"discord\"\nurl = \"https://d.example/x\"",
            "notify[1].name",
            "lowercase",
        ),
        (long_name.as_str(), "notify[1].name", "1 to 64"),
        (
            "name = \"ok\"\nkind = \"discord\"\nurl = \"https://d.example/x\"",
            "notify[1].name",
            "also the name of notify[0]",
        ),
        (
            "name = \"b\"\nkind = \"discord\"\nurl = \"ftp://d.example/x\"",
            "notify[1].url",
            "http:// or https://",
        ),
        (
            "name = \"b\"\nkind = \"webhook\"\nurl = \"d.example/x\"",
            "notify[1].url",
            "http:// or https://",
        ),
        (
            "name = \"b\"\nkind = \"slack\"",
            "notify[1].url",
            "is not set",
        ),
        (
            "name = \"b\"\nkind = \"ntfy\"\nurl = \"https://ntfy.sh\"",
            "notify[1].topic",
            "required for kind ntfy",
        ),
        (
            "name = \"b\"\nkind = \"ntfy\"\nurl = \"https://ntfy.sh\"\ntopic = \"a/b\"",
            "notify[1].topic",
            "letters, digits",
        ),
        (
            "name = \"b\"\nkind = \"discord\"\nurl = \"https://d.example/x\"\ntopic = \"t\"",
            "notify[1].topic",
            "does not use topic",
        ),
        (
            "name = \"b\"\nkind = \"slack\"\nurl = \"https://s.example/x\"\ntoken_file = \"t\"",
            "notify[1].token_file",
            "takes url only",
        ),
        (
            "name = \"b\"\nkind = \"command\"\nurl = \"https://s.example/x\"\ncommand = [\"x\"]",
            "notify[1].url",
            "command takes command only",
        ),
        (
            "name = \"b\"\nkind = \"webhook\"\nurl = \"https://s.example/x\"\ncommand = [\"x\"]",
            "notify[1].command",
            "does not use command",
        ),
        (
            "name = \"b\"\nkind = \"command\"\ncommand = []",
            "notify[1].command",
            "is empty",
        ),
        (
            "name = \"b\"\nkind = \"command\"",
            "notify[1].command",
            "is empty",
        ),
        (
            "name = \"b\"\nkind = \"command\"\ncommand = [\"x\"]\ntimeout_ms = 99",
            "notify[1].timeout_ms",
            "100..=120000",
        ),
        (
            "name = \"b\"\nkind = \"command\"\ncommand = [\"x\"]\ntimeout_ms = 120001",
            "notify[1].timeout_ms",
            "100..=120000",
        ),
    ];
    for (sink, key, allowed) in cases {
        let text = format!("{FIRST}{sink}\n");
        let file: NotifyFile =
            toml::from_str(&text).unwrap_or_else(|error| panic!("{sink}: {error}"));
        let error = validate_all(&file.notify).expect_err(&format!("{sink} should be refused"));
        assert_eq!(error.key(), key, "{sink}: {error}");
        assert!(error.to_string().contains(allowed), "{sink}: {error}");
    }
}

#[test]
fn unknown_keys_and_kinds_do_not_parse() {
    let unknown_key = format!(
        "{FIRST}name = \"b\"\nkind = \"slack\"\nurl = \"https://s.example\"\ncolour = \"red\"\n"
    );
    let error = toml::from_str::<NotifyFile>(&unknown_key).unwrap_err();
    assert!(error.to_string().contains("colour"), "{error}");

    let unknown_kind = format!("{FIRST}name = \"b\"\nkind = \"email\"\n");
    let error = toml::from_str::<NotifyFile>(&unknown_kind).unwrap_err();
    assert!(error.to_string().contains("email"), "{error}");
}

// ---- the receiver itself -----------------------------------------------------------

async fn raw_exchange(stream: &mut TcpStream, request: &[u8]) -> String {
    stream.write_all(request).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(WAIT, stream.read_to_string(&mut response))
        .await
        .expect("the receiver answers and closes")
        .unwrap();
    response
}

#[tokio::test]
async fn the_receiver_answers_a_request_without_body_at_once() {
    let server = receiver().await;
    let mut stream = TcpStream::connect(server.address()).await.unwrap();

    let response = raw_exchange(&mut stream, b"POST /x HTTP/1.1\r\nHost: h\r\n\r\n").await;

    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.ends_with("{\"ok\":true}"), "{response}");
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/x");
    assert_eq!(received[0].body, "");
}

#[tokio::test]
async fn the_receiver_serves_others_while_one_client_stalls() {
    let server = receiver().await;
    let mut stalled = TcpStream::connect(server.address()).await.unwrap();
    stalled
        .write_all(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
        .await
        .unwrap();
    let mut other = TcpStream::connect(server.address()).await.unwrap();

    let response = raw_exchange(
        &mut other,
        b"POST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi",
    )
    .await;

    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    let received = server.received();
    assert_eq!(received.len(), 1, "the stalled request is not recorded yet");
    assert_eq!(received[0].body, "hi");
}

#[tokio::test]
async fn the_receiver_uses_scripted_responses_in_order_then_200() {
    let server = receiver().await;
    server.respond_with(vec![(503, Some(7)), (404, None)]);
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(server.address()).await.unwrap();
        let response = raw_exchange(&mut stream, b"GET / HTTP/1.1\r\n\r\n").await;
        statuses.push(response.lines().next().unwrap().to_owned());
        if statuses.len() == 1 {
            assert!(response.contains("Retry-After: 7\r\n"), "{response}");
        }
    }
    assert_eq!(
        statuses,
        [
            "HTTP/1.1 503 Service Unavailable",
            "HTTP/1.1 404 Not Found",
            "HTTP/1.1 200 OK"
        ]
    );
    assert_eq!(server.wait_for(3, WAIT).await.len(), 3);
}

#[tokio::test]
async fn waiting_for_a_particular_request_is_not_fooled_by_a_repeated_one() {
    let server = receiver().await;
    let sink = webhook("phone", server.url(), None);
    let http = http_client();
    let started = notification();
    // A delivery that was retried arrives twice: two requests, one notification.
    attempt(&sink, &started, &http).await;
    attempt(&sink, &started, &http).await;
    let decided = |received: &[ReceivedRequest]| {
        received
            .iter()
            .any(|request| request.header("idempotency-key") != Some("home:d-1:started"))
    };
    assert_eq!(server.wait_for(2, WAIT).await.len(), 2);
    assert!(!decided(&server.received()));

    let waiting = server.wait_until(WAIT, decided);
    let mut later = started.clone();
    later.idempotency_key = "home:d-1:decided".into();
    let (received, _) = tokio::join!(waiting, attempt(&sink, &later, &http));
    assert!(decided(&received), "{received:?}");
    assert_eq!(received.len(), 3);
}

#[tokio::test]
async fn the_receiver_stops_listening_when_dropped() {
    let server = receiver().await;
    let address = server.address();
    drop(server);
    let deadline = tokio::time::Instant::now() + WAIT;
    // The server task ends at its next poll; connecting keeps failing from then on.
    while TcpStream::connect(address).await.is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still listening on {address}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
