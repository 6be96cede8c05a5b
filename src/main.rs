//! The `ipam-guard` binary: parse flags, hand over to the library.

use std::process::ExitCode;

use clap::Parser;
use ipam_guard::cli::{Cli, Command};

#[tokio::main]
async fn main() -> ExitCode {
    // Before anything builds a TLS config or a kube client: keeps every TLS user on ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => {
            let registry = prometheus_client::registry::Registry::default();
            match ipam_guard::cli::serve::run(*args, registry).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Check(args) => {
            ExitCode::from(u8::try_from(ipam_guard::cli::check::run(&args)).unwrap_or(2))
        }
        Command::Audit(args) => {
            ExitCode::from(u8::try_from(ipam_guard::cli::audit::run(&args).await).unwrap_or(2))
        }
        Command::Explain(args) => {
            ExitCode::from(u8::try_from(ipam_guard::cli::explain::run(&args)).unwrap_or(2))
        }
        Command::Usage(args) => {
            ExitCode::from(u8::try_from(ipam_guard::cli::usage::run(&args).await).unwrap_or(2))
        }
        Command::DevWebhooks(args) => {
            ExitCode::from(u8::try_from(ipam_guard::cli::dev_webhooks::run(&args)).unwrap_or(2))
        }
    }
}
