//! How the tools reach a profiler server: the flags `capture-profile` and `prof-top`
//! share (`--connect-timeout-ms`, `--token`, `--tls-ca`, `--tls-domain`), flattened
//! into each one's arguments, and the [`Connection`] they describe.

use std::path::PathBuf;
use std::time::Duration;

use profiler_remote::client::{ClientTls, Connection};

/// Longest connect timeout: ten minutes.
pub const MAX_CONNECT_TIMEOUT_MS: u64 = 600 * 1000;

/// The connection flags. A command that says more of one of them than this (as
/// `capture-profile` does) sets its own help with `mut_arg`.
#[derive(Debug, clap::Args)]
pub struct ConnectionArgs {
    /// How long connecting may take
    #[arg(long, value_name = "MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CONNECT_TIMEOUT_MS))]
    pub connect_timeout_ms: u64,

    /// Send `authorization: Bearer TOKEN` with every call (servers started with
    /// ServerBuilder::bearer_token)
    #[arg(
        long,
        value_name = "TOKEN",
        env = "PROF_PROFILER_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,

    /// Connect over TLS, trusting the certificate(s) in this PEM file
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,

    /// The name the server's certificate carries, when it is not the host in the address
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    pub tls_domain: Option<String>,
}

impl ConnectionArgs {
    /// The connection these flags describe, with the `--tls-ca` file read.
    ///
    /// # Errors
    /// `--tls-ca FILE: why` when the file cannot be read.
    pub fn connection(&self) -> Result<Connection, String> {
        let tls = match &self.tls_ca {
            Some(path) => Some(ClientTls {
                ca_certificate_pem: std::fs::read(path)
                    .map_err(|e| format!("--tls-ca {}: {e}", path.display()))?,
                domain_name: self.tls_domain.clone(),
            }),
            None => None,
        };
        Ok(Connection {
            bearer_token: self.token.clone(),
            tls,
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Tool {
        #[command(flatten)]
        connection: ConnectionArgs,
    }

    fn connection(line: &str) -> Result<Connection, String> {
        let tool = Tool::try_parse_from(std::iter::once("tool").chain(line.split_whitespace()))
            .map_err(|e| e.to_string())?;
        tool.connection.connection()
    }

    #[test]
    fn the_flags_make_the_connection() {
        let dir = tempfile::tempdir().expect("tmp");
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, b"-----BEGIN CERTIFICATE-----").expect("write");
        let c = connection(&format!(
            "--connect-timeout-ms 250 --token s3cret --tls-ca {} --tls-domain localhost",
            ca.display()
        ))
        .expect("parses");
        assert_eq!(c.connect_timeout, Duration::from_millis(250));
        assert_eq!(c.bearer_token.as_deref(), Some("s3cret"));
        let tls = c.tls.expect("tls");
        assert_eq!(tls.domain_name.as_deref(), Some("localhost"));
        assert_eq!(tls.ca_certificate_pem, b"-----BEGIN CERTIFICATE-----");

        let plain = connection("").expect("no flags");
        assert_eq!(plain.connect_timeout, Duration::from_secs(5));
        assert!(plain.tls.is_none());
    }

    #[test]
    fn mistakes_name_the_flag() {
        let missing = connection("--tls-ca /nonexistent/ca.pem").expect_err("missing file");
        assert!(
            missing.starts_with("--tls-ca /nonexistent/ca.pem: "),
            "{missing}"
        );
        let domain = connection("--tls-domain x").expect_err("--tls-domain needs --tls-ca");
        assert!(domain.contains("--tls-ca"), "{domain}");
        let zero = connection("--connect-timeout-ms 0").expect_err("0 ms");
        assert!(zero.contains("--connect-timeout-ms"), "{zero}");
        let long = connection("--connect-timeout-ms 600001").expect_err("over 10 min");
        assert!(long.contains("1..=600000"), "{long}");
    }
}
