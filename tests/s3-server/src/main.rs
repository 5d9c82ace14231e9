//! `prof-s3-server ROOT ACCESS_KEY SECRET_KEY`: serves ROOT as an S3 endpoint on
//! 127.0.0.1 (a bucket is a directory of ROOT), prints `http://127.0.0.1:PORT` on
//! stdout once listening, and serves until its stdin closes, so a test that dies
//! takes its server with it.

use std::path::PathBuf;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(root), Some(key), Some(secret)) = (args.next(), args.next(), args.next()) else {
        return Err("usage: prof-s3-server ROOT ACCESS_KEY SECRET_KEY".into());
    };
    let mut builder = S3ServiceBuilder::new(
        s3s_fs::FileSystem::new(PathBuf::from(root)).map_err(|e| format!("{e:?}"))?,
    );
    builder.set_auth(SimpleAuth::from_single(key, secret));
    let service = builder.build();
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}", listener.local_addr()?);
    let server = Builder::new(TokioExecutor::new());
    let mut stdin = tokio::io::stdin();
    let mut sink = [0u8; 64];
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((socket, _)) = accepted else { continue };
                let conn = server.serve_connection(TokioIo::new(socket), service.clone()).into_owned();
                tokio::spawn(async move { drop(conn.await) });
            }
            // End of input (or an error): the test that started us is gone.
            read = stdin.read(&mut sink) => if matches!(read, Ok(0) | Err(_)) { return Ok(()) },
        }
    }
}
