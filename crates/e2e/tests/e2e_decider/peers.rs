//! The peer listener: a caller without a replica's client certificate is refused and nothing it
//! sent is recorded.

use super::*;

/// Sends a decision request straight to a peer listener with the given TLS client settings.
/// `Err` when the connection or the request failed (refused).
pub async fn peer_decide(
    peer: SocketAddr,
    config: Arc<ClientConfig>,
    obj: &Value,
) -> Result<Value, String> {
    let request = json!({
        "group": "ipam.cluster.x-k8s.io", "kind": obj["kind"], "version": "v1alpha2",
        "operation": "CREATE", "namespace": NS, "name": obj["metadata"]["name"],
        "object": obj, "dryRun": false
    });
    let mut conn = Conn::open_with(peer, config, Proto::H2)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let reply = conn
        .send(post(
            ipam_guard::decider::peer::DECIDE_PATH,
            Some("application/json"),
            serde_json::to_vec(&request).unwrap(),
        ))
        .await
        .map_err(|e| format!("request: {e}"))?;
    if reply.status != 200 {
        return Err(format!("HTTP {}", reply.status));
    }
    Ok(reply.json())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_a_peer_without_a_client_certificate_or_from_another_ca_is_refused_and_records_nothing()
{
    e2e::each_server(
        "x2_a_peer_without_a_client_certificate_or_from_another_ca_is_refused_and_records_nothing",
        refused_peers_against,
    )
    .await;
}

pub async fn refused_peers_against(assets: e2e::Server) {
    let s = Setup::start(&assets, 2).await;
    let d = s.decider().await;
    let follower = s.replicas[1 - d].webhook;
    let peer = s.replicas[d].peer;
    let ca = &s.pki.ca_der;

    let attacked = pool("attack", "10.97.1.10-10.97.1.20");
    let none = peer_decide(peer, tls_client(ca, None), &attacked).await;
    assert!(none.is_err(), "no client certificate: {none:?}");
    let other = pki("another CA");
    let foreign = peer_decide(peer, tls_client(ca, Some(&other)), &attacked).await;
    assert!(foreign.is_err(), "a certificate of another CA: {foreign:?}");
    // Nothing was recorded: the same range is admitted through a replica.
    let legit = review(&pool("legit", "10.97.1.10-10.97.1.20"), false);
    assert_eq!(send(follower, ca, &legit).await, Answer::Allowed);

    // The control: with a certificate of the replicas' CA the same call does record, so the
    // refusals above are the certificate check and not a broken call.
    let recorded = peer_decide(
        peer,
        tls_client(ca, Some(&s.pki)),
        &pool("trusted", "10.97.2.10-10.97.2.20"),
    )
    .await
    .expect("a replica's certificate is accepted");
    assert!(recorded.get("unavailable").is_none(), "{recorded}");
    assert_eq!(recorded["errors"], json!([]), "{recorded}");
    let after = review(&pool("after", "10.97.2.10-10.97.2.20"), false);
    match send(follower, ca, &after).await {
        Answer::Denied(_, m) => assert!(m.contains("overlap"), "{m}"),
        other => panic!("the trusted peer's admission was not recorded: {other:?}"),
    }
    assert!(std::fs::read_to_string(&s.replicas[d].log)
        .unwrap()
        .contains("peer refused: TLS handshake failed"));
}
