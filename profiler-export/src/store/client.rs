//! A client for an [`ObjectUrl`]'s store, configured from the environment as each
//! cloud's own tools read it, with bounded retries and timeouts; and the runtime the
//! blocking writers and readers drive it on.

use std::future::Future;
use std::sync::{Arc, Once};
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::{BackoffConfig, ClientConfigKey, ObjectStore, RetryConfig};
use profiler_core::{Error, ErrorKind, Result};

use super::url::{ObjectUrl, Scheme};

/// Retries of one request (5xx answers, refused or dropped connections) before its
/// failure is final, within [`RETRY_WINDOW`]: a store answering 503 twice is ridden
/// out, a dead endpoint fails in seconds rather than object_store's default 3 minutes.
const MAX_RETRIES: usize = 4;
const RETRY_WINDOW: Duration = Duration::from_secs(30);
/// Connecting: a host that does not answer at all fails here.
const CONNECT_TIMEOUT: &str = "5s";
/// One request, start to end: a 2 GiB `.xplane.pb` at 20 MB/s is 100 s.
const REQUEST_TIMEOUT: &str = "300s";

/// The environment variable naming the endpoint of an S3-compatible store (MinIO,
/// R2, a test server), as the AWS CLI reads it. `AWS_ENDPOINT` is read too.
pub(super) const ENDPOINT_ENV: &str = "AWS_ENDPOINT_URL";

/// A client for `url`'s bucket. Credentials and region come from the environment:
/// `AWS_*` for S3 (keys, session token, region, `AWS_ENDPOINT_URL`, web identity, ECS
/// and instance metadata), `GOOGLE_*` for GCS (`GOOGLE_APPLICATION_CREDENTIALS`,
/// `GOOGLE_SERVICE_ACCOUNT`, or the metadata server), `AZURE_*` for Azure
/// (`AZURE_STORAGE_ACCOUNT_NAME` and a key, SAS or client secret, or
/// `AZURE_STORAGE_USE_EMULATOR`). An `http://` endpoint is allowed when it is named
/// explicitly (a local test server).
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] naming the URL when the configuration is incomplete
/// or malformed (no account for Azure, a bad endpoint). No request is made.
pub(super) fn connect(url: &ObjectUrl) -> Result<Arc<dyn ObjectStore>> {
    install_crypto();
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: MAX_RETRIES,
        retry_timeout: RETRY_WINDOW,
    };
    let bucket_url = format!("{}://{}", url.scheme().as_str(), url.bucket());
    let built: object_store::Result<Arc<dyn ObjectStore>> = match url.scheme() {
        Scheme::S3 => {
            let mut b = AmazonS3Builder::from_env()
                .with_url(&bucket_url)
                .with_retry(retry)
                .with_config(client(ClientConfigKey::ConnectTimeout), CONNECT_TIMEOUT)
                .with_config(client(ClientConfigKey::Timeout), REQUEST_TIMEOUT);
            let endpoint = std::env::var(ENDPOINT_ENV).or_else(|_| std::env::var("AWS_ENDPOINT"));
            if let Ok(endpoint) = endpoint {
                b = b
                    .with_allow_http(endpoint.starts_with("http://"))
                    .with_endpoint(endpoint)
                    // A custom endpoint is a path-style one (MinIO, s3s, Ceph); the
                    // AWS default stays virtual-hosted.
                    .with_virtual_hosted_style_request(false);
            }
            b.build().map(|s| Arc::new(s) as _)
        }
        Scheme::Gcs => GoogleCloudStorageBuilder::from_env()
            .with_url(&bucket_url)
            .with_retry(retry)
            .with_client_options(
                object_store::ClientOptions::new()
                    .with_connect_timeout(Duration::from_secs(5))
                    .with_timeout(Duration::from_secs(300)),
            )
            .build()
            .map(|s| Arc::new(s) as _),
        Scheme::Azure => MicrosoftAzureBuilder::from_env()
            .with_url(&bucket_url)
            .with_retry(retry)
            .with_client_options(
                object_store::ClientOptions::new()
                    .with_allow_http(true)
                    .with_connect_timeout(Duration::from_secs(5))
                    .with_timeout(Duration::from_secs(300)),
            )
            .build()
            .map(|s| Arc::new(s) as _),
    };
    built.map_err(|e| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("cannot use logdir {url}: its store's configuration is incomplete"),
        )
        .with_source(e)
    })
}

fn client(key: ClientConfigKey) -> object_store::aws::AmazonS3ConfigKey {
    object_store::aws::AmazonS3ConfigKey::Client(key)
}

/// rustls needs one crypto provider for the process; prof brings ring (the one tonic's
/// TLS already builds) and installs it unless the program installed another first.
fn install_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err: the program installed its own provider, which is kept.
        drop(rustls::crypto::ring::default_provider().install_default());
    });
}

/// Runs `future` to completion on a runtime of its own, on a thread of its own: the
/// writers are called from plain threads, from `Drop`, from a panic hook, and from
/// inside a program's own tokio runtime, where blocking on another runtime would
/// panic.
pub(super) fn block_on<F>(future: F) -> Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("prof-object-store".into())
            .spawn_scoped(scope, || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(4)
                    .thread_name("prof-object-store")
                    .enable_all()
                    .build()?;
                Ok::<_, std::io::Error>(runtime.block_on(future))
            })
            .map_err(|e| {
                Error::new(ErrorKind::Io, "cannot start the upload thread").with_source(e)
            })?;
        match worker.join() {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(e)) => {
                Err(Error::new(ErrorKind::Io, "cannot start the upload runtime").with_source(e))
            }
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// A short name for why a request failed, for the one line a person reads: the HTTP
/// status, or the network's reason. The whole chain follows it as the error's source.
pub(super) fn cause(error: &object_store::Error) -> String {
    let mut chain = String::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        chain.push_str(&e.to_string().to_ascii_lowercase());
        chain.push(' ');
        next = e.source();
    }
    // "status code: 403", "status: 403", "status 403": the first three digits after.
    let status = chain.match_indices("status").find_map(|(i, _)| {
        let after = chain.get(i + 6..)?;
        let after = after.strip_prefix(" code").unwrap_or(after);
        let after = after.trim_start_matches([':', ' ']);
        let code = after.get(..3)?;
        code.bytes().all(|b| b.is_ascii_digit()).then_some(code)
    });
    match error {
        object_store::Error::PermissionDenied { .. } => {
            format!(
                "access denied ({}): the store refused the credentials",
                status.unwrap_or("403")
            )
        }
        object_store::Error::Unauthenticated { .. } => {
            format!("not authenticated ({})", status.unwrap_or("401"))
        }
        object_store::Error::NotFound { .. } => "not found (404): does the bucket exist?".into(),
        _ if chain.contains("dns error") || chain.contains("failed to lookup address") => {
            "DNS lookup failed".into()
        }
        _ if chain.contains("connection refused") => "connection refused".into(),
        // Not "timeout": every retried error names its `retry_timeout`.
        _ if chain.contains("timed out") || chain.contains("deadline has elapsed") => {
            "timed out".into()
        }
        _ => match status {
            Some(code) => format!("HTTP {code}"),
            None => "request failed".into(),
        },
    }
}
