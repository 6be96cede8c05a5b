//! A live cluster read as what other objects are judged against or counted with: the
//! projections of the objects it stores (`check --kubeconfig`, `usage`), the schemas of its
//! installed CRDs and its release (`check --kubeconfig`).

use std::path::Path;
use std::sync::Arc;

use kube::Client;

use super::crd::CrdSchemas;
use super::stored::{Judged, Judging, FILE};
use crate::cluster::live::read::Progress;
use crate::cluster::live::{self};
use crate::kube_version::KubeVersion;
use crate::model::Projection;
use crate::schema::Schemas;

/// The projections of every object of the kinds the live view keeps (one `resourceVersion=0`
/// list each, decoded item by item, only the projections held), and the kinds that could not be
/// listed. `server` (its URL) names the cluster in those errors.
pub async fn projections(
    client: &Client,
    server: &str,
    progress: Arc<dyn Progress>,
) -> (Vec<Projection>, Vec<String>) {
    let (read, errors) = live::read::read(
        client,
        server,
        live::watched,
        Judging::new(Judged::None, FILE),
        progress,
    )
    .await;
    (read.into_projections(), errors)
}

/// What a cluster holds for `check --kubeconfig`: its objects as projections, the schemas of
/// its installed CRDs (when asked for) and its release.
pub type Cluster = (Vec<Projection>, Option<Schemas>, KubeVersion);

/// Lists the cluster of `kubeconfig`/`context`: the objects it stores, the schemas of its
/// installed CRDs (the truth for that cluster: the versions it serves, the fields its providers'
/// releases define) and its release (`/version`). `check` is synchronous; the listing runs on
/// the binary's runtime when there is one (blocking this thread only), else on its own. The CRDs
/// are read only when `crds` (`--crd-dir` names the schemas otherwise). `progress` is made once
/// the cluster answers, so nothing is drawn for a cluster that cannot be reached.
pub fn read_cluster(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    crds: bool,
    progress: impl FnOnce() -> Arc<dyn Progress>,
) -> Result<Cluster, String> {
    let list = async {
        let (client, server) = live::client_and_server(kubeconfig, context)
            .await
            .map_err(|e| live::describe(&e))?;
        // Projections only: the files are judged against what the stored objects count as.
        let (stored, errors) = projections(&client, &server, progress()).await;
        // Judging against a partial cluster could pass what the whole would refuse.
        if let Some(e) = errors.first() {
            return Err(e.clone());
        }
        // After the listing, whose errors name an unreachable server best.
        let info = client
            .apiserver_version()
            .await
            .map_err(|e| format!("{server}: reading /version: {e}"))?;
        let version = KubeVersion::from_version_info(&info.major, &info.minor)
            .map_err(|e| format!("{server}: {e}"))?;
        if !crds {
            return Ok((stored, None, version));
        }
        let (read, crds) =
            live::read::list_resource(&client, &live::crd_resource(), CrdSchemas::default()).await;
        let failed = |e: String| format!("cannot list CustomResourceDefinitions: {e}");
        read.map_err(|e| failed(live::read::describe(&server, &e)))?;
        let crds = crds.ok_or_else(|| failed("the list decoder failed".to_string()))?;
        match crds.error {
            Some(e) => Err(e),
            None => Ok((stored, Some(crds.schemas), version)),
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => tokio::task::block_in_place(|| handle.block_on(list)),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(list),
    }
}
