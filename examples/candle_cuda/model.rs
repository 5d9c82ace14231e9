//! The model: a small pre-norm transformer of candle-nn layers, each a `Traced`
//! annotation.

use candle_core::{DType, Device, Module, Tensor, Var, D};
use candle_nn::{Init, VarBuilder, VarMap};
use prof::candle::{ModuleExt as _, Traced};
use tracing::{span, Level, Span};

use crate::{Config, Result};

/// Layer norm from composed ops, so that it has a backward pass.
pub(crate) struct LayerNorm {
    pub(crate) weight: Tensor,
    pub(crate) bias: Tensor,
}

impl LayerNorm {
    pub(crate) fn new(dim: usize, vb: VarBuilder) -> candle_core::Result<Traced<LayerNorm>> {
        Ok(LayerNorm {
            weight: vb.get_with_hints(dim, "weight", Init::Const(1.0))?,
            bias: vb.get_with_hints(dim, "bias", Init::Const(0.0))?,
        }
        .traced("layer-norm"))
    }
}

impl Module for LayerNorm {
    fn forward(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
        candle_nn::ops::layer_norm_slow(xs, &self.weight, &self.bias, 1e-5)
    }
}

pub(crate) fn linear(
    d_in: usize,
    d_out: usize,
    vb: VarBuilder,
) -> candle_core::Result<Traced<candle_nn::Linear>> {
    Ok(candle_nn::linear(d_in, d_out, vb)?.traced("linear"))
}

/// Causal multi-head self-attention over a fixed sequence length.
pub(crate) struct Attention {
    pub(crate) qkv: Traced<candle_nn::Linear>,
    pub(crate) out: Traced<candle_nn::Linear>,
    /// `seq × seq`: 0 on and below the diagonal, a large negative number above.
    pub(crate) mask: Tensor,
    pub(crate) heads: usize,
    /// candle-transformers' name for the softmax span.
    pub(crate) softmax: Span,
}

impl Attention {
    pub(crate) fn new(config: Config, vb: VarBuilder) -> candle_core::Result<Attention> {
        let Config { dim, seq, .. } = config;
        let mask: Vec<f32> = (0..seq)
            .flat_map(|i| (0..seq).map(move |j| if j > i { -1e9 } else { 0.0 }))
            .collect();
        Ok(Attention {
            qkv: linear(dim, 3 * dim, vb.pp("qkv"))?,
            out: linear(dim, dim, vb.pp("out"))?,
            mask: Tensor::from_vec(mask, (seq, seq), vb.device())?,
            heads: config.heads,
            softmax: span!(Level::TRACE, "attn-softmax"),
        })
    }
}

impl Module for Attention {
    fn forward(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
        let (b, t, dim) = xs.dims3()?;
        let head_dim = dim / self.heads;
        let heads = |x: Tensor| -> candle_core::Result<Tensor> {
            x.reshape((b, t, self.heads, head_dim))?
                .transpose(1, 2)?
                .contiguous()
        };
        let qkv = self.qkv.forward(xs)?;
        let q = heads(qkv.narrow(D::Minus1, 0, dim)?)?;
        let k = heads(qkv.narrow(D::Minus1, dim, dim)?)?;
        let v = heads(qkv.narrow(D::Minus1, 2 * dim, dim)?)?;
        let scores = (q.matmul(&k.t()?)? / (head_dim as f64).sqrt())?;
        let weights = {
            let _enter = self.softmax.enter();
            candle_nn::ops::softmax(&scores.broadcast_add(&self.mask)?, D::Minus1)?
        };
        let mixed = weights.matmul(&v)?.transpose(1, 2)?.reshape((b, t, dim))?;
        self.out.forward(&mixed)
    }
}

/// Two-layer GELU feed-forward.
pub(crate) struct Mlp {
    pub(crate) up: Traced<candle_nn::Linear>,
    pub(crate) down: Traced<candle_nn::Linear>,
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
        self.down.forward(&self.up.forward(xs)?.gelu()?)
    }
}

/// A pre-norm transformer block.
pub(crate) struct Block {
    pub(crate) norm_1: Traced<LayerNorm>,
    pub(crate) attn: Traced<Attention>,
    pub(crate) norm_2: Traced<LayerNorm>,
    pub(crate) mlp: Traced<Mlp>,
}

impl Block {
    pub(crate) fn new(config: Config, vb: VarBuilder) -> candle_core::Result<Block> {
        let dim = config.dim;
        Ok(Block {
            norm_1: LayerNorm::new(dim, vb.pp("norm_1"))?,
            attn: Attention::new(config, vb.pp("attn"))?.traced("attn"),
            norm_2: LayerNorm::new(dim, vb.pp("norm_2"))?,
            mlp: Mlp {
                up: linear(dim, 4 * dim, vb.pp("mlp.up"))?,
                down: linear(4 * dim, dim, vb.pp("mlp.down"))?,
            }
            .traced("mlp"),
        })
    }
}

impl Module for Block {
    fn forward(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
        let xs = (xs + self.attn.forward(&self.norm_1.forward(xs)?)?)?;
        &xs + self.mlp.forward(&self.norm_2.forward(&xs)?)?
    }
}

/// Token ids `(batch, seq)` to logits `(batch, seq, vocab)`.
pub(crate) struct Model {
    pub(crate) embedding: Traced<candle_nn::Embedding>,
    pub(crate) blocks: Vec<Traced<Block>>,
    pub(crate) norm: Traced<LayerNorm>,
    pub(crate) head: Traced<candle_nn::Linear>,
}

impl Model {
    pub(crate) fn new(config: Config, vb: VarBuilder) -> candle_core::Result<Model> {
        let blocks = (0..config.layers)
            .map(|i| {
                Ok(Block::new(config, vb.pp(format!("blocks.{i}")))?
                    .traced("block")
                    .layer(i))
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Model {
            embedding: candle_nn::embedding(config.vocab, config.dim, vb.pp("embedding"))?
                .traced("embedding"),
            blocks,
            norm: LayerNorm::new(config.dim, vb.pp("norm"))?,
            head: candle_nn::linear_no_bias(config.dim, config.vocab, vb.pp("head"))?
                .traced("lm_head"),
        })
    }

    /// The model with its parameters in `varmap` on `device`, initialised on the CPU
    /// (candle's random initialisation on a GPU would run cuRAND kernels outside any
    /// step) and then moved.
    pub(crate) fn on(device: &Device, varmap: &VarMap, config: Config) -> Result<Model> {
        Model::new(
            config,
            VarBuilder::from_varmap(varmap, DType::F32, &Device::Cpu),
        )?;
        if !device.is_cpu() {
            let mut vars = varmap.data().lock().unwrap_or_else(|e| e.into_inner());
            for var in vars.values_mut() {
                *var = Var::from_tensor(&var.to_device(device)?)?;
            }
        }
        // The variables exist: the builder hands them out instead of initialising.
        Ok(Model::new(
            config,
            VarBuilder::from_varmap(varmap, DType::F32, device),
        )?)
    }
}

impl Module for Model {
    fn forward(&self, tokens: &Tensor) -> candle_core::Result<Tensor> {
        let mut xs = self.embedding.forward(tokens)?;
        for block in &self.blocks {
            xs = block.forward(&xs)?;
        }
        self.head.forward(&self.norm.forward(&xs)?)
    }
}
