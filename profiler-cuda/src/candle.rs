//! Named annotations around candle modules (feature `candle`).
//!
//! candle-core and candle-nn emit no spans, so a model built from their layers shows
//! nothing between a step and its kernels. [`Traced`] puts a prof annotation around a
//! module's `forward`: on the host line it is an event named for the layer, and on
//! candle's CUDA backend every kernel the layer launches carries that name (and the
//! step) in its `annotation` stat, through the CUPTI external correlation the
//! annotation pushes.
//!
//! ```
//! use candle_core::{Device, Module, Tensor};
//! use profiler_cuda::candle::ModuleExt as _;
//!
//! // Any Module: a candle-nn layer, a model, or a closure as here.
//! let gelu = (|xs: &Tensor| xs.gelu()).traced("gelu");
//! let block = (|xs: &Tensor| xs.relu()).traced("block").layer(3);
//!
//! profiler_core::session::start(profiler_core::ProfileOptions::default(), None)?;
//! let xs = Tensor::new(&[-1f32, 0.5, 2.0], &Device::Cpu)?;
//! let ys = block.forward(&gelu.forward(&xs)?)?;
//! let profile = profiler_core::session::stop()?;
//! assert_eq!(ys.dims(), &[3]);
//! assert_eq!(profile.event_count(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Building candle with its `cuda` feature needs nvcc at build time (candle-kernels
//! compiles its `.cu` files); prof's own tracer does not. Both share one cudarc, and
//! stock candle-core 0.11 asks it for `dynamic-linking`, under which this crate does not
//! compile (it uses cudarc's run-time loading API): prof's
//! `examples/build_candle_cuda.sh` builds candle with run-time loading instead.

use std::ops::Deref;

use candle_core::{Module, ModuleT, Result, Tensor};

/// A module whose `forward` is a prof annotation named `name`, with a `layer` field
/// when [`layer`](Traced::layer) set one.
///
/// The annotation is recorded whenever the session's `host_tracer_level >= 1` (the
/// default); with nothing recording, the wrapper costs one relaxed atomic load per
/// call. It derefs to the wrapped module, so its own methods (`weight()`, …) stay in
/// reach.
#[derive(Debug, Clone)]
pub struct Traced<M> {
    inner: M,
    name: &'static str,
    layer: Option<u64>,
}

impl<M> Traced<M> {
    /// Wraps `inner`; its forward passes become annotations named `name`.
    pub fn new(name: &'static str, inner: M) -> Traced<M> {
        Traced {
            inner,
            name,
            layer: None,
        }
    }

    /// Adds a `layer = index` field to each annotation, for the repeated blocks of a
    /// model that share one name (`block`, layer 0 … n).
    #[must_use]
    pub fn layer(mut self, index: usize) -> Traced<M> {
        self.layer = Some(index as u64);
        self
    }

    /// The annotation's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The wrapped module.
    pub fn into_inner(self) -> M {
        self.inner
    }

    /// Opens this layer's annotation. Fields are only evaluated while it records.
    #[inline]
    fn annotate(&self) -> profiler_core::Trace {
        let trace = profiler_core::trace!(self.name);
        if let Some(layer) = self.layer {
            profiler_core::set_metadata!(trace, layer = layer);
        }
        trace
    }
}

impl<M: ModuleT> Traced<M> {
    /// [`ModuleT::forward_t`] of the wrapped module under the annotation: for modules
    /// that only implement `ModuleT` (dropout, batch norm).
    ///
    /// # Errors
    /// Whatever the wrapped module's `forward_t` returns.
    pub fn forward_t(&self, xs: &Tensor, train: bool) -> Result<Tensor> {
        let _annotation = self.annotate();
        self.inner.forward_t(xs, train)
    }
}

impl<M: Module> Module for Traced<M> {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let _annotation = self.annotate();
        self.inner.forward(xs)
    }
}

impl<M> Deref for Traced<M> {
    type Target = M;

    fn deref(&self) -> &M {
        &self.inner
    }
}

/// `module.traced("attn")`: [`Traced::new`] as a method on any module.
pub trait ModuleExt: Sized {
    /// Wraps `self` in a [`Traced`] annotation named `name`.
    fn traced(self, name: &'static str) -> Traced<Self> {
        Traced::new(name, self)
    }
}

impl<M: ModuleT> ModuleExt for M {}
