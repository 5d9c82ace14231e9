//! A small Llama-style decoder on candle (CPU, random weights) whose layers carry
//! `tracing` spans named as candle-transformers names them, captured through
//! `prof::ProfilerLayer` into a TensorBoard/XProf logdir.
//!
//! ```text
//! cargo run --example candle_layers -- [--logdir DIR] [--steps N]
//! ```
//!
//! candle-transformers' models create their spans once, when the model is built
//! (`tracing::span!(Level::TRACE, "attn")`), keep them in the layer, and enter them on
//! every forward pass; its `with_tracing` wrappers do the same for `linear`,
//! `rms-norm` and `embedding`. This model does exactly that, so the profile looks like
//! one of a real candle-transformers model: each step (`Generate`, with `step_num`)
//! holds `model` → `block` → `attn` / `mlp` → `linear`, `rms-norm`, `softmax`, at
//! TRACE level, which the default `host_tracer_level` (2) records.
#![allow(clippy::print_stdout)]

use std::error::Error;

use candle_core::{DType, Device, Module, Tensor, D};
use candle_nn::{VarBuilder, VarMap};
use tracing::{span, Level, Span};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

mod common;

type Result<T> = candle_core::Result<T>;

/// candle-transformers' `with_tracing::Linear`: a linear layer with a `linear` span.
struct Linear {
    inner: candle_nn::Linear,
    span: Span,
}

impl Linear {
    fn new(d_in: usize, d_out: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Linear {
            inner: candle_nn::linear_no_bias(d_in, d_out, vb)?,
            span: span!(Level::TRACE, "linear"),
        })
    }
}

impl Module for Linear {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let _enter = self.span.enter();
        self.inner.forward(xs)
    }
}

/// candle-transformers' `with_tracing::RmsNorm`.
struct RmsNorm {
    inner: candle_nn::RmsNorm,
    span: Span,
}

impl RmsNorm {
    fn new(size: usize, vb: VarBuilder) -> Result<Self> {
        Ok(RmsNorm {
            inner: candle_nn::rms_norm(size, 1e-5, vb)?,
            span: span!(Level::TRACE, "rms-norm"),
        })
    }
}

impl Module for RmsNorm {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let _enter = self.span.enter();
        self.inner.forward(xs)
    }
}

/// Causal self-attention, as candle-transformers' llama `CausalSelfAttention`.
struct Attention {
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    heads: usize,
    span: Span,
    span_softmax: Span,
}

impl Attention {
    fn new(dim: usize, heads: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Attention {
            q: Linear::new(dim, dim, vb.pp("q_proj"))?,
            k: Linear::new(dim, dim, vb.pp("k_proj"))?,
            v: Linear::new(dim, dim, vb.pp("v_proj"))?,
            o: Linear::new(dim, dim, vb.pp("o_proj"))?,
            heads,
            span: span!(Level::TRACE, "attn"),
            span_softmax: span!(Level::TRACE, "attn-softmax"),
        })
    }

    fn forward(&self, xs: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let _enter = self.span.enter();
        let (b, t, dim) = xs.dims3()?;
        let head_dim = dim / self.heads;
        let split = |x: Tensor| -> Result<Tensor> {
            x.reshape((b, t, self.heads, head_dim))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = split(self.q.forward(xs)?)?;
        let k = split(self.k.forward(xs)?)?;
        let v = split(self.v.forward(xs)?)?;
        let scores = (q.matmul(&k.t()?)? / (head_dim as f64).sqrt())?;
        let scores = scores.broadcast_add(mask)?;
        let weights = {
            let _enter = self.span_softmax.enter();
            candle_nn::ops::softmax_last_dim(&scores)?
        };
        let out = weights.matmul(&v)?.transpose(1, 2)?.reshape((b, t, dim))?;
        self.o.forward(&out)
    }
}

/// SwiGLU feed-forward, as candle-transformers' llama `Mlp`.
struct Mlp {
    gate: Linear,
    up: Linear,
    down: Linear,
    span: Span,
}

impl Mlp {
    fn new(dim: usize, hidden: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Mlp {
            gate: Linear::new(dim, hidden, vb.pp("gate_proj"))?,
            up: Linear::new(dim, hidden, vb.pp("up_proj"))?,
            down: Linear::new(hidden, dim, vb.pp("down_proj"))?,
            span: span!(Level::TRACE, "mlp"),
        })
    }

    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let _enter = self.span.enter();
        let gated = (candle_nn::ops::silu(&self.gate.forward(xs)?)? * self.up.forward(xs)?)?;
        self.down.forward(&gated)
    }
}

/// A pre-norm decoder block, as candle-transformers' llama `Block`.
struct Block {
    norm_1: RmsNorm,
    attn: Attention,
    norm_2: RmsNorm,
    mlp: Mlp,
    span: Span,
}

impl Block {
    fn new(dim: usize, heads: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Block {
            norm_1: RmsNorm::new(dim, vb.pp("input_layernorm"))?,
            attn: Attention::new(dim, heads, vb.pp("self_attn"))?,
            norm_2: RmsNorm::new(dim, vb.pp("post_attention_layernorm"))?,
            mlp: Mlp::new(dim, 4 * dim, vb.pp("mlp"))?,
            span: span!(Level::TRACE, "block"),
        })
    }

    fn forward(&self, xs: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let _enter = self.span.enter();
        let xs = (xs + self.attn.forward(&self.norm_1.forward(xs)?, mask)?)?;
        &xs + self.mlp.forward(&self.norm_2.forward(&xs)?)?
    }
}

struct Model {
    embedding: candle_nn::Embedding,
    span_embedding: Span,
    blocks: Vec<Block>,
    norm: RmsNorm,
    lm_head: Linear,
    span: Span,
}

impl Model {
    fn new(vocab: usize, dim: usize, layers: usize, heads: usize, vb: VarBuilder) -> Result<Self> {
        let blocks = (0..layers)
            .map(|i| Block::new(dim, heads, vb.pp(format!("model.layers.{i}"))))
            .collect::<Result<Vec<_>>>()?;
        Ok(Model {
            embedding: candle_nn::embedding(vocab, dim, vb.pp("model.embed_tokens"))?,
            span_embedding: span!(Level::TRACE, "embedding"),
            blocks,
            norm: RmsNorm::new(dim, vb.pp("model.norm"))?,
            lm_head: Linear::new(dim, vocab, vb.pp("lm_head"))?,
            span: span!(Level::TRACE, "model"),
        })
    }

    /// Logits of the last position.
    fn forward(&self, tokens: &Tensor) -> Result<Tensor> {
        let _enter = self.span.enter();
        let t = tokens.dim(1)?;
        let mask: Vec<f32> = (0..t)
            .flat_map(|i| (0..t).map(move |j| if j > i { f32::NEG_INFINITY } else { 0.0 }))
            .collect();
        let mask = Tensor::from_vec(mask, (t, t), tokens.device())?;
        let mut xs = {
            let _enter = self.span_embedding.enter();
            self.embedding.forward(tokens)?
        };
        for block in &self.blocks {
            xs = block.forward(&xs, &mask)?;
        }
        let last = self.norm.forward(&xs)?.narrow(1, t - 1, 1)?;
        self.lm_head.forward(&last)?.squeeze(1)
    }
}

fn main() -> std::result::Result<(), Box<dyn Error>> {
    let (args, common::NoExtra {}) = common::parse(
        "candle_layers",
        "Profiles a Llama-style candle-nn decoder through ProfilerLayer.",
        10,
    );
    tracing_subscriber::registry()
        .with(prof::ProfilerLayer::new())
        .init();
    let device = Device::Cpu;
    let (vocab, dim, layers, heads) = (512, 64, 2, 4);
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
    let model = Model::new(vocab, dim, layers, heads, vb)?;

    prof::start(&args.logdir, args.options(prof::ProfileOptions::default()))?;
    // Greedy generation: each step runs the whole prompt and appends one token.
    let mut tokens: Vec<u32> = vec![1, 17, 42, 7];
    for step in 0..args.steps {
        let trace = prof::trace!("Generate", step_num = step, tokens = tokens.len());
        let input = Tensor::new(tokens.as_slice(), &device)?.unsqueeze(0)?;
        let logits = model.forward(&input)?;
        let next = logits.argmax(D::Minus1)?.squeeze(0)?.to_scalar::<u32>()?;
        prof::set_metadata!(trace, next_token = next);
        tokens.push(next);
    }
    let profile = prof::stop().inspect_err(|e| eprintln!("{e}"))?;

    let stats = format!(
        "{} steps, {} events; generated tokens {:?}",
        profile.steps().len(),
        profile.event_count(),
        &tokens[4..]
    );
    common::report(&profile, &args, &stats)?;
    Ok(())
}
