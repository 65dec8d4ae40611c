//! `fleetd`: one node of a fleet. `fleetd --config fleetd.toml` starts it; SIGINT or
//! SIGTERM stops it cleanly. A bad config fails at start with the key named. Its
//! runtime has as many worker threads as the config's `worker_threads` says.
//! Its allocator is mimalloc.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use fleet_node::config::NodeConfig;
use fleet_node::runtime::spin_window;
use tracing_subscriber::EnvFilter;

/// mimalloc: a write passes through many short-lived buffers (TLS records, HTTP/2
/// frames, encoded entries), which it serves from per-thread free lists.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs one node of a fleet.
#[derive(Parser)]
#[command(name = "fleetd", version, about)]
struct Args {
    /// The node's config file (TOML); `FLEET_*` environment variables override it.
    #[arg(long, env = "FLEETD_CONFIG")]
    config: PathBuf,
    /// Log filter, e.g. `info` or `fleet_node=debug,openraft=info`; `RUST_LOG` wins.
    #[arg(long, default_value = "info,openraft=warn")]
    log: String,
    /// Log as JSON lines.
    #[arg(long)]
    log_json: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&args.log));
    if args.log_json {
        tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .init();
    } else {
        let colours = std::io::stdout().is_terminal();
        tracing_subscriber::fmt()
            .with_ansi(colours)
            .with_env_filter(filter)
            .init();
    }
    let config = match NodeConfig::load(&args.config) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("fleetd: {error}");
            return ExitCode::from(2);
        }
    };
    if let Some(pid_file) = &config.pid_file
        && let Err(error) = std::fs::write(pid_file, std::process::id().to_string())
    {
        eprintln!(
            "fleetd: cannot write pid_file {}: {error}",
            pid_file.display()
        );
        return ExitCode::from(2);
    }
    let idle_driver = spin_window::idle_driver();
    let halt_poll_ns = spin_window::halt_poll_ns();
    let cpu_vendor = spin_window::cpu_vendor();
    let window = spin_window::window_for(
        config.spin_window_us,
        idle_driver.as_deref(),
        halt_poll_ns,
        cpu_vendor.as_deref(),
    );
    let keeper = spin_window::start(window, idle_driver.as_deref());
    tracing::info!(
        window_us = window.as_micros(),
        configured = config.spin_window_us.is_some(),
        idle_driver = idle_driver.as_deref().unwrap_or("unknown"),
        halt_poll_ns,
        cpu_vendor = cpu_vendor.as_deref().unwrap_or("unknown"),
        kept_by = keeper.unwrap_or("nothing"),
        "spin window"
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.worker_threads)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("fleetd: cannot start the runtime: {error}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(run(config))
}

/// Runs the node until SIGINT or SIGTERM.
async fn run(config: NodeConfig) -> ExitCode {
    let running = match fleet_node::runtime::start(config).await {
        Ok(running) => running,
        Err(error) => {
            eprintln!("fleetd: {error}");
            return ExitCode::from(1);
        }
    };
    wait_for_stop_signal().await;
    tracing::info!("stopping");
    running.shutdown().await;
    ExitCode::SUCCESS
}

async fn wait_for_stop_signal() {
    let mut terminate =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
