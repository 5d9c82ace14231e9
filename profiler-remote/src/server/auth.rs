//! The bearer token: every call must carry `authorization: Bearer <token>` when the
//! server was given one ([`ServerBuilder::bearer_token`](super::ServerBuilder::bearer_token)),
//! else it is refused with UNAUTHENTICATED before any handler runs.

use std::sync::Arc;

use tonic::service::Interceptor;
use tonic::{Request, Status};

/// Checks each call's token, when there is one to check.
#[derive(Clone, Debug)]
pub(super) struct Auth {
    /// The whole expected header value, `Bearer <token>`.
    expected: Option<Arc<[u8]>>,
}

impl Auth {
    pub(super) fn new(token: Option<&str>) -> Auth {
        Auth {
            expected: token.map(|t| format!("Bearer {t}").into_bytes().into()),
        }
    }
}

/// Whether a token can travel in an HTTP/2 header: visible ASCII, not empty.
pub(super) fn is_valid_token(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic())
}

/// Compares without stopping at the first difference, so the time taken does not
/// tell a guesser how much of the token it has right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Interceptor for Auth {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.expected else {
            return Ok(request);
        };
        let sent = request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes());
        match sent {
            Some(sent) if same(sent, expected) => Ok(request),
            Some(_) => Err(Status::unauthenticated(
                "the bearer token is not this server's",
            )),
            None => Err(Status::unauthenticated(
                "this server needs a bearer token: send `authorization: Bearer <token>`",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_compared_whole() {
        assert!(same(b"Bearer abc", b"Bearer abc"));
        assert!(!same(b"Bearer abc", b"Bearer abd"));
        assert!(!same(b"Bearer abc", b"Bearer ab"));
        assert!(is_valid_token("s3cr3t-token_1"));
        assert!(!is_valid_token(""));
        assert!(!is_valid_token("has space"));
        assert!(!is_valid_token("line\nbreak"));
    }
}
