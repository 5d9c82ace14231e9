//! A training loop that can be profiled from outside while it runs: it serves
//! `tensorflow.ProfilerService` on 127.0.0.1, so TensorBoard/XProf's Capture button,
//! `python -m jax.collect_profile PORT 2000` or `capture-profile localhost:PORT`
//! record it on demand.
//!
//! ```text
//! cargo run --example serve_training -- [--port 6009] [--seconds 60]
//! ```
//!
//! It prints `listening on 127.0.0.1:PORT` once it can be captured, and exits after
//! `--seconds` (so tests and scripts never leave it running).
#![allow(clippy::print_stdout)]

use std::error::Error;
use std::io::Write as _;
use std::time::{Duration, Instant};

/// A training loop serving tensorflow.ProfilerService on 127.0.0.1, to be captured
/// from outside.
#[derive(clap::Parser)]
struct Args {
    /// Port on 127.0.0.1 (0 picks a free one)
    #[arg(long, default_value_t = 6009)]
    port: u16,
    /// Exit after this long
    #[arg(long, default_value_t = 60)]
    seconds: u64,
}

fn main() -> Result<(), Box<dyn Error>> {
    let Args { port, seconds } = clap::Parser::parse();
    let server = prof::server::start(port)?;
    println!("listening on {}", server.local_addr());
    std::io::stdout().flush()?;

    let until = Instant::now() + Duration::from_secs(seconds);
    let mut weights = vec![0.5f32; 4096];
    let mut step = 0u64;
    while Instant::now() < until {
        let _step = prof::trace!("Train", step_num = step);
        {
            let _t = prof::trace!("load_batch");
            std::thread::sleep(Duration::from_millis(2));
        }
        {
            let _t = prof::trace!("forward");
            for w in &mut weights {
                *w = (*w * 1.0001).sin().abs();
            }
        }
        {
            let _t = prof::trace!("backward");
            for w in &mut weights {
                *w -= 0.0001 * *w;
            }
        }
        step += 1;
    }
    server.stop();
    Ok(())
}
