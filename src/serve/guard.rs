//! Who may ask: a request's `Host` must name the address the server listens on (localhost,
//! 127.0.0.1 or [::1] when it listens on a loopback address; an IP address, never a DNS name,
//! when it listens on all of them), with its port, or it is refused (421); this defeats DNS
//! rebinding, where another site's name resolves to this machine. A request that a browser
//! sends on behalf of another page (`Origin` other than the server's own, or `Sec-Fetch-Site`
//! `cross-site` or `same-site`) is refused (403), so no page elsewhere (an `<img src>` will do)
//! can make the browser run simulations. The page itself is same-origin, and a request from
//! outside a browser (curl) sends neither header.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::config::capped;

/// The address the server listens on.
#[derive(Debug, Clone, Copy)]
pub struct Bound(pub SocketAddr);

impl Bound {
    /// Whether `host` (a `Host` header: name, then `:port` unless it is 80) names this server.
    pub fn is_host(&self, host: &str) -> bool {
        let (name, port) = split_host(host);
        let port_ok = match port {
            Some(p) => p.parse::<u16>().ok() == Some(self.0.port()),
            None => self.0.port() == 80,
        };
        port_ok && self.is_name(name)
    }

    fn is_name(&self, name: &str) -> bool {
        let ip = self.0.ip();
        let literal = name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().ok();
        match literal {
            Some(_) if ip.is_unspecified() => true,
            Some(named) => named == ip || (ip.is_loopback() && named.is_loopback()),
            None => {
                name.eq_ignore_ascii_case("localhost") && (ip.is_loopback() || ip.is_unspecified())
            }
        }
    }
}

/// A `Host` value's name and port (`[::1]:8077` -> (`[::1]`, `8077`)).
fn split_host(host: &str) -> (&str, Option<&str>) {
    match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => (&host[..i], Some(&host[i + 1..])),
        _ => (host, None),
    }
}

/// The middleware: refuse a request whose `Host` is not this server's, or that another
/// page's origin sent.
pub async fn check(State(bound): State<Bound>, req: Request, next: Next) -> Response {
    match refusal(bound, req.headers(), req.uri().authority().map(|a| a.as_str())) {
        Some((status, message)) => {
            let body = format!("{message}\n");
            (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
        }
        None => next.run(req).await,
    }
}

/// Why a request with `headers` (and the URI's authority, for an absolute-form request) is
/// refused, or `None`.
fn refusal(
    bound: Bound,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Option<(StatusCode, String)> {
    let text = |name: header::HeaderName| {
        headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let own = format!("http://{}", bound.0);
    let host = match text(header::HOST).or_else(|| authority.map(str::to_string)) {
        Some(h) => h,
        None => {
            return Some((
                StatusCode::MISDIRECTED_REQUEST,
                format!("no Host header; this server is {own}"),
            ))
        }
    };
    if !bound.is_host(&host) {
        let msg = format!(
            "Host `{}` does not name this server ({own}); use the address it printed",
            capped(&host)
        );
        return Some((StatusCode::MISDIRECTED_REQUEST, msg));
    }
    if let Some(origin) = text(header::ORIGIN) {
        if !origin.eq_ignore_ascii_case(&format!("http://{host}")) {
            let msg = format!(
                "cross-origin request refused: Origin `{}` is not this server's (http://{})",
                capped(&origin),
                capped(&host)
            );
            return Some((StatusCode::FORBIDDEN, msg));
        }
    }
    let site = text(header::HeaderName::from_static("sec-fetch-site"));
    if let Some(site) = site.filter(|s| !matches!(s.as_str(), "same-origin" | "none")) {
        let msg = format!(
            "cross-origin request refused: Sec-Fetch-Site `{}` (another page sent it); open the \
             page at http://{} itself",
            capped(&site),
            capped(&host)
        );
        return Some((StatusCode::FORBIDDEN, msg));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(a: &str) -> Bound {
        Bound(a.parse().unwrap())
    }

    #[test]
    fn hosts_name_the_bound_address_and_port() {
        let b = bound("127.0.0.1:8077");
        for ok in ["127.0.0.1:8077", "localhost:8077", "LOCALHOST:8077", "[::1]:8077"] {
            assert!(b.is_host(ok), "{ok}");
        }
        for bad in [
            "evil.example:8077",
            "127.0.0.1:8078",
            "127.0.0.1",
            "10.0.0.1:8077",
            "",
            "localhost.:8077",
        ] {
            assert!(!b.is_host(bad), "{bad}");
        }
        let all = bound("0.0.0.0:9000");
        assert!(all.is_host("192.168.1.7:9000") && all.is_host("localhost:9000"));
        assert!(!all.is_host("rebound.example:9000"));
        let v6 = bound("[::1]:80");
        assert!(v6.is_host("[::1]") && v6.is_host("localhost") && !v6.is_host("[::1]:81"));
    }
}
