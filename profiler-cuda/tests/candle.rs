//! `Traced` candle modules on the CPU: their forward passes are annotations nested as
//! the model nests them, with their `layer` fields, and each one reaches the tracer
//! scope hook through which the CUPTI tracer attributes kernels to it. Its own test
//! binary: the scope hook is process-wide.

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{VarBuilder, VarMap};
use prof_test_support::scope_hook;
use profiler_core::schema;
use profiler_core::tracer;
use profiler_core::xspace::{XPlane, XStatValue};
use profiler_core::{session, trace, ProfileOptions};
use profiler_cuda::candle::{ModuleExt as _, Traced};

/// Two blocks of `linear` → `relu`, as a model holds them.
struct Mlp {
    blocks: Vec<Traced<Block>>,
}

struct Block {
    linear: Traced<candle_nn::Linear>,
    act: Traced<fn(&Tensor) -> candle_core::Result<Tensor>>,
}

impl Module for Block {
    fn forward(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
        self.act.forward(&self.linear.forward(xs)?)
    }
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
        self.blocks
            .iter()
            .try_fold(xs.clone(), |xs, b| b.forward(&xs))
    }
}

fn relu(xs: &Tensor) -> candle_core::Result<Tensor> {
    xs.relu()
}

fn mlp(vb: &VarBuilder) -> Mlp {
    let blocks = (0..2)
        .map(|i| {
            let linear = candle_nn::linear(8, 8, vb.pp(format!("l{i}"))).expect("linear");
            Block {
                linear: linear.traced("linear"),
                act: (relu as fn(&Tensor) -> candle_core::Result<Tensor>).traced("relu"),
            }
            .traced("block")
            .layer(i)
        })
        .collect();
    Mlp { blocks }
}

/// (name, depth on its line, layer field) of each event on the line with the steps
/// (other tests of this binary may record on their own threads), in order.
fn nested_events(plane: &XPlane) -> Vec<(String, usize, Option<i64>)> {
    let mut out = Vec::new();
    let steps = plane.lines.iter().filter(|l| {
        l.events
            .iter()
            .any(|e| plane.event_name(e.metadata_id) == Some("Train"))
    });
    for line in steps {
        let mut open: Vec<i64> = Vec::new();
        for e in &line.events {
            let start = e.offset_ps();
            open.retain(|&end| end > start);
            let layer = match plane.find_stat(&e.stats, "layer") {
                Some(XStatValue::Int64(v)) => Some(*v),
                Some(XStatValue::Uint64(v)) => Some(*v as i64),
                None => None,
                Some(other) => panic!("layer field {other:?}"),
            };
            let name = plane.event_name(e.metadata_id).unwrap_or("?").to_string();
            out.push((name, open.len(), layer));
            open.push(start + e.duration_ps);
        }
    }
    out
}

#[test]
fn traced_modules_are_nested_annotations_that_reach_the_scope_hook() {
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let model = mlp(&vb);
    let xs = Tensor::ones((4, 8), DType::F32, &Device::Cpu).expect("input");

    // Nothing records: the wrapped model computes exactly what the bare one does.
    let bare = model
        .blocks
        .iter()
        .try_fold(xs.clone(), |xs, b| {
            let b: &Block = b;
            b.act.forward(&b.linear.forward(&xs)?)
        })
        .expect("bare");
    let untraced = model.forward(&xs).expect("untraced forward");
    let diff = (bare - &untraced)
        .expect("sub")
        .abs()
        .expect("abs")
        .sum_all()
        .expect("sum")
        .to_scalar::<f32>()
        .expect("scalar");
    assert_eq!(diff, 0.0);

    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    tracer::set_scope_hook(Some(&scope_hook::HOOK));
    for step in 0..2 {
        let _t = trace!("Train", step_num = step);
        model.forward(&xs).expect("forward");
    }
    tracer::set_scope_hook(None);
    let profile = session::stop().expect("stop");

    let host = profile
        .xspace()
        .plane(schema::HOST_PLANE)
        .expect("host plane");
    let events = nested_events(host);
    let step: Vec<(&str, usize, Option<i64>)> = [
        ("Train", 0, None),
        ("block", 1, Some(0)),
        ("linear", 2, None),
        ("relu", 2, None),
        ("block", 1, Some(1)),
        ("linear", 2, None),
        ("relu", 2, None),
    ]
    .into();
    let got: Vec<(&str, usize, Option<i64>)> = events
        .iter()
        .map(|(n, d, l)| (n.as_str(), *d, *l))
        .collect();
    assert_eq!(got, [step.clone(), step].concat());

    // Every annotation, the wrappers' included, was entered and exited through the
    // hook in nesting order: 2 steps × 7 annotations.
    let scopes = scope_hook::take();
    assert_eq!(scopes.len(), 2 * 7 * 2, "{scopes:?}");
    let mut stack = Vec::new();
    for (is_enter, id) in scopes {
        if is_enter {
            stack.push(id);
        } else {
            assert_eq!(stack.pop(), Some(id), "exits in reverse order of entries");
        }
    }
    assert!(stack.is_empty());
}

#[test]
fn forward_t_and_accessors() {
    let dropout = candle_nn::Dropout::new(0.5);
    let traced = Traced::new("dropout", dropout);
    assert_eq!(traced.name(), "dropout");
    let xs = Tensor::ones(4, DType::F32, &Device::Cpu).expect("input");
    // Evaluation mode: dropout is the identity.
    let ys = traced.forward_t(&xs, false).expect("forward_t");
    assert_eq!(ys.to_vec1::<f32>().expect("vec"), vec![1.0; 4]);
    let linear =
        candle_nn::Linear::new(Tensor::eye(2, DType::F32, &Device::Cpu).expect("eye"), None)
            .traced("linear");
    // Deref reaches the wrapped layer's own methods.
    assert_eq!(linear.weight().dims(), &[2, 2]);
    assert!(linear.into_inner().bias().is_none());
}
