//! Stored objects judged as if each were created now (X4), the way `ipam-guard audit` and
//! the periodic audit of `serve --audit-interval` judge them: a pass over a listing of the
//! cluster (every object judged as a CREATE against all the others, as `check` judges files),
//! or over what a cluster view already holds (the rules that compare objects, `rules::stored`).
//! Both add the findings about pools and addresses over time (`rules::health`).

use std::sync::Arc;

use kube::Client;

use super::round::{Found, Round};
use super::stored::{Judged, Judging, FILE};
use super::{Finding, Subject, Summary};
use crate::cluster::live::read::{Progress, Silent};
use crate::cluster::live::{self};
use crate::cluster::ClusterView;
use crate::rules::Options;

/// What one audit pass found, over a listing or over what a view holds.
#[derive(Debug, Default)]
pub struct ClusterFindings {
    pub findings: Vec<Finding>,
    /// Kinds that could not be listed (or discovery itself): each makes the exit code 2.
    pub errors: Vec<String>,
    pub summary: Summary,
}

/// Lists every served kind of the table (one `resourceVersion=0` list each, decoded item by
/// item) and judges each object as a CREATE against all the others.
pub async fn audit(client: &Client, options: Options) -> ClusterFindings {
    audit_at(client, "", options, Judged::All, Arc::new(Silent)).await
}

/// `audit` judging only the objects `judged` selects (`-n`): the others count for them, as
/// projections.
pub async fn audit_judging(client: &Client, options: Options, judged: Judged) -> ClusterFindings {
    audit_at(client, "", options, judged, Arc::new(Silent)).await
}

/// `audit`, naming `server` (its URL) in what could not be read, judging the objects `judged`
/// selects (the others are kept only as projections).
pub async fn audit_at(
    client: &Client,
    server: &str,
    options: Options,
    judged: Judged,
    progress: Arc<dyn Progress>,
) -> ClusterFindings {
    let options = Options {
        stored: true,
        ..options
    };
    let (read, errors) = live::read::read(
        client,
        server,
        |_| true,
        Judging::new(judged, FILE),
        progress,
    )
    .await;
    // Judging is CPU work on 100k objects: off the runtime's threads.
    let (objects, findings) = match tokio::task::spawn_blocking(move || {
        read.finish(options, |index| health_findings(index, options, now()))
    })
    .await
    {
        Ok(judged) => judged,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => {
            return ClusterFindings {
                errors: vec![format!("judging the cluster stopped: {e}")],
                ..ClusterFindings::default()
            }
        }
    };
    let mut summary = Summary {
        objects,
        unreadable: errors.len(),
        ..Summary::default()
    };
    summary.count(&findings);
    ClusterFindings {
        findings,
        errors,
        summary,
    }
}

/// The wall clock in Unix seconds, what `rules::health` compares creation timestamps with.
fn now() -> i64 {
    unix_seconds(std::time::SystemTime::now())
}

/// `t` in Unix seconds (negative before 1970).
pub(crate) fn unix_seconds(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// H1, H2, H3 and E1 (`rules::health`) as findings with file `cluster`.
fn health_findings(index: &crate::index::Index, options: Options, now: i64) -> Vec<Finding> {
    let file: Arc<str> = Arc::from(FILE);
    crate::rules::health::judge(index, options, now)
        .into_iter()
        .map(|(key, w)| Finding::warn(&Subject::new(Some(file.clone()), key), &w))
        .collect()
}

/// One pass of the periodic audit (`server::audit`) over what `view` holds, with file `cluster`,
/// at the system's time.
pub fn judge_view(view: &dyn ClusterView, options: Options) -> ClusterFindings {
    judge_view_at(view, options, std::time::SystemTime::now())
}

/// `judge_view` at `now` (tests pass a `ManualClock`'s wall time).
pub fn judge_view_at(
    view: &dyn ClusterView,
    options: Options,
    now: std::time::SystemTime,
) -> ClusterFindings {
    let mut round = Round::start(view, options, unix_seconds(now));
    while round.step(view) {}
    view_findings(round.finish())
}

/// `judge_view_at`, letting other tasks run between its steps: the periodic audit's pass, which
/// shares the runtime with the webhook.
pub async fn judge_view_stepwise(
    view: &dyn ClusterView,
    options: Options,
    now: std::time::SystemTime,
) -> ClusterFindings {
    let mut round = Round::start(view, options, unix_seconds(now));
    while round.step(view) {
        tokio::task::yield_now().await;
    }
    view_findings(round.finish())
}

fn view_findings(found: Found) -> ClusterFindings {
    let file: Arc<str> = Arc::from(FILE);
    let mut findings: Vec<Finding> = found
        .denials
        .into_iter()
        .map(|(key, e)| Finding::deny(&Subject::new(Some(file.clone()), key), &e))
        .collect();
    findings.extend(
        found
            .warnings
            .into_iter()
            .map(|(key, w)| Finding::warn(&Subject::new(Some(file.clone()), key), &w)),
    );
    let mut summary = Summary {
        objects: found.counts.into_iter().collect(),
        ..Summary::default()
    };
    summary.count(&findings);
    ClusterFindings {
        findings,
        errors: Vec::new(),
        summary,
    }
}
