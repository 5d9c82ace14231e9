//! A small CPU training loop on candle tensors, profiled into a TensorBoard/XProf logdir.
//!
//! ```text
//! cargo run --example train_loop -- [--logdir DIR] [--steps N]
//! ```
//!
//! Each step is a `Train` annotation with `step_num`, so XProf's overview page graphs
//! step times; inside it, data loading, forward, backward and the optimizer update are
//! nested annotations, and the step's loss is attached after it is known and recorded
//! on a `loss` counter track.
#![allow(clippy::print_stdout)]

use std::error::Error;

use candle_core::{DType, Device, Tensor, Var};

mod common;

/// The loss after each step, as a counter track beside the timeline.
static LOSS: prof::Counter = prof::Counter::new("loss");

/// A two-layer perceptron regressing random targets.
struct Mlp {
    w1: Var,
    w2: Var,
}

impl Mlp {
    fn new(inputs: usize, hidden: usize, device: &Device) -> candle_core::Result<Mlp> {
        Ok(Mlp {
            w1: Var::randn(0f32, 0.1, (inputs, hidden), device)?,
            w2: Var::randn(0f32, 0.1, (hidden, 1), device)?,
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let _t = prof::trace!("forward", batch = x.dims()[0]);
        let h = {
            let _t = prof::trace!("dense_1/MatMul");
            x.matmul(self.w1.as_tensor())?.relu()?
        };
        let _t = prof::trace!("dense_2/MatMul");
        h.matmul(self.w2.as_tensor())
    }

    fn sgd(&self, grads: &candle_core::backprop::GradStore, lr: f64) -> candle_core::Result<()> {
        let _t = prof::trace!("optimizer", kind = "sgd", lr = lr);
        for w in [&self.w1, &self.w2] {
            if let Some(g) = grads.get(w.as_tensor()) {
                w.set(&(w.as_tensor() - (g * lr)?)?)?;
            }
        }
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = common::parse_args("train_loop [--logdir DIR] [--steps N]", 20, |_, _| {
        Ok(false)
    })?;
    let device = Device::Cpu;
    let (batch, inputs, hidden) = (64, 128, 256);
    let model = Mlp::new(inputs, hidden, &device)?;
    // A fixed pool of batches: a step whose batch was produced before is a cache hit.
    let mut cache: Vec<(Tensor, Tensor)> = Vec::new();

    prof::start(&args.logdir, args.options(prof::ProfileOptions::default()))?;
    for step in 0..args.steps {
        let step_trace = prof::trace!("Train", step_num = step);
        let (x, y) = {
            let load = prof::trace!("load_batch");
            let slot = (step % 4) as usize;
            let hit = slot < cache.len();
            if !hit {
                let x = Tensor::randn(0f32, 1.0, (batch, inputs), &device)?;
                let y = Tensor::randn(0f32, 1.0, (batch, 1), &device)?;
                cache.push((x, y));
            }
            prof::set_metadata!(load, in_cache = hit);
            cache[slot].clone()
        };
        let pred = model.forward(&x)?;
        let loss = {
            let _t = prof::trace!("loss");
            (pred - y)?.sqr()?.mean_all()?
        };
        let grads = {
            let _t = prof::trace!("backward");
            loss.backward()?
        };
        model.sgd(&grads, 0.01)?;
        // Deferred field: the loss is known only at the end of the step.
        let loss = loss.to_dtype(DType::F32)?.to_scalar::<f32>()?;
        step_trace.set_metadata("loss", loss);
        LOSS.set(loss);
    }
    let profile = prof::stop().inspect_err(|e| eprintln!("{e}"))?;

    let threads = profile
        .xspace()
        .plane(prof::schema::HOST_PLANE)
        .map_or(0, |p| p.lines.len());
    let stats = format!(
        "{} steps, {} events on {threads} thread(s)",
        profile.steps().len(),
        profile.event_count()
    );
    common::report(&profile, &args, &stats)?;
    Ok(())
}
