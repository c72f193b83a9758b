//! Connections: at most `MAX_CONNECTIONS` open at once (beyond them a new connection waits in
//! the listen queue until one closes), and each closed when its request headers take longer
//! than `HEADER_TIMEOUT` to arrive, which also closes a keep-alive connection idle that long
//! (hyper's header read timeout runs from the moment the connection waits for a request). So
//! half-sent requests and idle sockets cannot hold the server: they are gone within seconds,
//! and a new request is then served.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Most connections open at once (well below a default limit of 1,024 file descriptors, and
/// of 256).
pub const MAX_CONNECTIONS: usize = 128;

/// Longest wait for a request's headers, on a new connection or an idle keep-alive one.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// A failed `accept` (out of file descriptors, say) is retried after this pause.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Accept connections on `listener` and serve `router` on each, for ever.
pub async fn accept(listener: TcpListener, router: Router) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let slot = Arc::clone(&slots).acquire_owned().await.expect("the semaphore stays open");
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of file descriptors or a connection reset before it was accepted: the
                // listener still works, and slots free up as connections time out.
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        let service = TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            // A connection that times out or breaks is closed; there is no one to tell.
            let _ = conn.await;
        });
    }
}
