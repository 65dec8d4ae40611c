//! The `openai` adapter: ask the agent gateway through its OpenAI-compatible chat
//! completions API and take the answer from a forced `submit_position` tool call.
//!
//! One request per phase: `POST <url>` with the gateway's bearer token, the prompt
//! of [`super::openai_prompt`], and `tool_choice` naming the tool. The reply's
//! `choices[0].message.tool_calls` must hold a `submit_position` call whose
//! `arguments` (a JSON string) is the answer. A model that only replies in text has
//! not answered.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::agent_config::AgentConfig;
use super::agent_error::{AgentError, excerpt};
use super::openai_prompt::{SUBMIT_POSITION, chat_request_body};
use super::{AgentAnswer, InputRequest, millis};

/// The most of a reply read: a chat completion with one tool call is a few
/// kilobytes; a gateway sending more is not answering this request.
const REPLY_BYTES_MAX: usize = 1024 * 1024;
/// Characters of a reply quoted in an error.
const EXCERPT_CHARS: usize = 300;

/// Asks the gateway for `request`, waiting at most `wait` for the whole exchange.
pub async fn ask(
    config: &AgentConfig,
    http: &reqwest::Client,
    request: &InputRequest,
    wait: Duration,
) -> Result<AgentAnswer, AgentError> {
    let (Some(url), Some(model), Some(token)) = (&config.url, &config.model, &config.token) else {
        return Err(AgentError::failed(
            "adapter = \"openai\" needs agent.url, agent.model and a token read from agent.token_file",
        ));
    };
    let body = chat_request_body(model, request);
    let exchange = async {
        let response = http
            .post(url)
            .bearer_auth(token.expose())
            .json(&body)
            .send()
            .await
            .map_err(|error| {
                AgentError::failed(format!(
                    "cannot reach the gateway at {url}: {}",
                    error_chain(&error)
                ))
            })?;
        let status = response.status();
        let reply = read_reply(response).await?;
        if !status.is_success() {
            return Err(AgentError::failed(format!(
                "the gateway at {url} answered HTTP {status}: {}",
                excerpt(&String::from_utf8_lossy(&reply), EXCERPT_CHARS)
            )));
        }
        parse_completion(&reply)
    };
    tokio::time::timeout(wait, exchange)
        .await
        .unwrap_or(Err(AgentError::Late {
            waited_ms: millis(wait),
        }))
}

async fn read_reply(mut response: reqwest::Response) -> Result<Vec<u8>, AgentError> {
    let mut reply = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|error| {
        AgentError::failed(format!(
            "the gateway's reply broke off: {}",
            error_chain(&error)
        ))
    })? {
        if reply.len() + chunk.len() > REPLY_BYTES_MAX {
            return Err(AgentError::malformed(format!(
                "the gateway's reply is larger than {REPLY_BYTES_MAX} bytes"
            )));
        }
        reply.extend_from_slice(&chunk);
    }
    Ok(reply)
}

/// The parts of OpenAI's `chat.completion` object we read; the rest is ignored so
/// gateways may add fields.
#[derive(Deserialize)]
struct ChatCompletion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChatMessage,
}

#[derive(Deserialize)]
struct ChatMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
}

#[derive(Deserialize)]
struct ToolCall {
    function: FunctionCall,
}

#[derive(Deserialize)]
struct FunctionCall {
    name: String,
    /// A JSON string per the API; some gateways send the object itself, which is
    /// accepted too.
    arguments: Value,
}

fn parse_completion(reply: &[u8]) -> Result<AgentAnswer, AgentError> {
    let completion: ChatCompletion = serde_json::from_slice(reply).map_err(|error| {
        AgentError::malformed(format!(
            "the gateway's reply is not a chat completion ({error}): {}",
            excerpt(&String::from_utf8_lossy(reply), EXCERPT_CHARS)
        ))
    })?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(AgentError::malformed("the gateway's reply has no choices"));
    };
    let message = choice.message;
    let call = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .find(|call| call.function.name == SUBMIT_POSITION);
    let Some(call) = call else {
        let said = match &message.content {
            Some(Value::String(text)) if !text.trim().is_empty() => {
                format!("; it replied: {}", excerpt(text, EXCERPT_CHARS))
            }
            _ => String::new(),
        };
        return Err(AgentError::malformed(format!(
            "the model did not call {SUBMIT_POSITION}{said}"
        )));
    };
    let arguments = match call.function.arguments {
        Value::String(text) => serde_json::from_str(&text).map_err(|error| (error, text)),
        other => {
            let text = other.to_string();
            serde_json::from_value(other).map_err(|error| (error, text))
        }
    };
    arguments.map_err(|(error, text)| {
        AgentError::malformed(format!(
            "the arguments of {SUBMIT_POSITION} are not a position ({error}): {}",
            excerpt(&text, EXCERPT_CHARS)
        ))
    })
}

/// An error with its causes, so "error sending request" says which (refused,
/// DNS, TLS).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
