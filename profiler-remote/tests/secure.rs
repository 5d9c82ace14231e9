//! What a server bound beyond loopback uses, tried over loopback: a bearer token
//! and (feature `tls`) TLS, through the library client's `Connection`.
//!
//! Sessions are process-wide, so every test holds `serial()`.

mod support;

use prof_test_support::serial;
use profiler_remote::client::{self, CaptureError, CaptureRequest, Captured, Connection};
use profiler_remote::proto;
use profiler_remote::server::ServerBuilder;
use support::{raw_client, runtime, serve_with};
use tonic::Code;

fn quick(connection: Connection) -> CaptureRequest {
    CaptureRequest {
        duration_ms: 50,
        connection,
        ..CaptureRequest::default()
    }
}

fn with_token(token: &str) -> Connection {
    Connection {
        bearer_token: Some(token.into()),
        ..Connection::default()
    }
}

fn assert_unauthenticated(result: Result<Captured, CaptureError>) {
    match result {
        Err(CaptureError::Server(e)) => {
            assert_eq!(e.kind(), profiler_core::ErrorKind::Unauthenticated, "{e}");
            assert!(e.to_string().contains("bearer token"), "{e}")
        }
        other => panic!("expected UNAUTHENTICATED, got {other:?}"),
    }
}

#[test]
fn a_bearer_token_is_required_once_set() {
    let _s = serial();
    let (_server, addr) = serve_with(ServerBuilder::new(0).bearer_token("s3cret-token"));
    let rt = runtime();
    assert_unauthenticated(rt.block_on(client::capture(&addr, &quick(Connection::default()))));
    assert_unauthenticated(rt.block_on(client::capture(&addr, &quick(with_token("guess")))));
    let captured = rt.block_on(client::capture(&addr, &quick(with_token("s3cret-token"))));
    assert!(matches!(captured, Ok(Captured::Space(_))), "{captured:?}");
    // Every call, not only Profile.
    let status = rt
        .block_on(async {
            raw_client(&addr)
                .await
                .terminate(proto::TerminateRequest::default())
                .await
        })
        .expect_err("refused");
    assert_eq!(status.code(), Code::Unauthenticated);
}

#[test]
fn a_token_that_cannot_travel_in_a_header_is_refused_at_start() {
    let error = ServerBuilder::new(0)
        .bearer_token("two words")
        .start()
        .expect_err("refused");
    assert_eq!(error.kind(), profiler_core::ErrorKind::InvalidArgument);
}

#[test]
fn the_token_does_not_show_in_debug_output() {
    let builder = ServerBuilder::new(0).bearer_token("s3cret-token");
    assert!(!format!("{builder:?}").contains("s3cret"));
    assert!(!format!("{:?}", with_token("s3cret-token")).contains("s3cret"));
}

#[cfg(not(feature = "tls"))]
#[test]
fn tls_without_the_feature_says_so() {
    let connection = Connection {
        tls: Some(client::ClientTls::default()),
        ..Connection::default()
    };
    match runtime().block_on(client::capture("127.0.0.1:1", &quick(connection))) {
        Err(CaptureError::BadAddress(e)) => assert!(e.to_string().contains("tls"), "{e}"),
        other => panic!("expected a settings error, got {other:?}"),
    }
}

#[cfg(feature = "tls")]
mod tls {
    use super::*;
    use profiler_remote::client::ClientTls;

    /// A self-signed certificate for `localhost`, and its key, PEM.
    fn self_signed() -> (String, String) {
        let certified =
            rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("certificate");
        (certified.cert.pem(), certified.signing_key.serialize_pem())
    }

    fn over_tls(ca_pem: &str, token: &str) -> Connection {
        Connection {
            bearer_token: Some(token.into()),
            tls: Some(ClientTls {
                ca_certificate_pem: ca_pem.as_bytes().to_vec(),
                domain_name: Some("localhost".into()),
            }),
            ..Connection::default()
        }
    }

    #[test]
    fn captures_over_tls_with_a_token() {
        let _s = serial();
        let (cert, key) = self_signed();
        let (_server, addr) = serve_with(
            ServerBuilder::new(0)
                .tls(cert.clone(), key)
                .bearer_token("t0ken"),
        );
        let rt = runtime();
        let captured = rt.block_on(client::capture(&addr, &quick(over_tls(&cert, "t0ken"))));
        assert!(matches!(captured, Ok(Captured::Space(_))), "{captured:?}");
        assert_unauthenticated(
            rt.block_on(client::capture(&addr, &quick(over_tls(&cert, "nope")))),
        );
        // A plaintext client gets nowhere.
        let plain = rt.block_on(client::capture(&addr, &quick(with_token("t0ken"))));
        assert!(plain.is_err(), "{plain:?}");
        // Nor does one that trusts another certificate.
        let (other, _) = self_signed();
        let untrusted = rt.block_on(client::capture(&addr, &quick(over_tls(&other, "t0ken"))));
        assert!(
            matches!(&untrusted, Err(e @ CaptureError::Unreachable(_))
                if profiler_core::error::report(e).to_string().contains("certificate")),
            "{untrusted:?}"
        );
    }

    /// The idle clock sees calls through TLS too: a capture outlasting the idle
    /// timeout keeps its connection.
    #[test]
    fn a_long_capture_over_tls_outlives_the_idle_timeout() {
        let _s = serial();
        let (cert, key) = self_signed();
        let limits = profiler_remote::server::Limits {
            idle_timeout: std::time::Duration::from_millis(300),
            ..Default::default()
        };
        let (_server, addr) =
            serve_with(ServerBuilder::new(0).tls(cert.clone(), key).limits(limits));
        let request = CaptureRequest {
            duration_ms: 1200,
            ..quick(over_tls(&cert, "unused"))
        };
        let captured = runtime().block_on(client::capture(&addr, &request));
        assert!(matches!(captured, Ok(Captured::Space(_))), "{captured:?}");
    }

    #[test]
    fn a_bad_certificate_is_refused_at_start() {
        let error = ServerBuilder::new(0)
            .tls("not a certificate", "not a key")
            .start()
            .expect_err("refused");
        assert_eq!(error.kind(), profiler_core::ErrorKind::InvalidArgument);
    }
}
