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
            match ipam_guard::cli::serve::run_with(*args, registry, release_freed_memory).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {}", ipam_guard::cluster::live::describe(&*e));
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
        Command::Policies(args) => {
            ExitCode::from(u8::try_from(ipam_guard::cli::policies::run(&args)).unwrap_or(2))
        }
        Command::Completions(args) => {
            ExitCode::from(u8::try_from(ipam_guard::cli::completions::run(&args)).unwrap_or(2))
        }
    }
}

/// glibc keeps the memory the parse of `--state-from` freed, pinned by the projections allocated
/// between it (142 MiB settled, 102 MiB after a trim, for 210k objects; docs/performance.md, "Memory").
/// Other allocators give it back on their own.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and only walks glibc's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}
