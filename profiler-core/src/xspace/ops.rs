//! XProf's op of a stack of annotations: the `tf_op` stat that names what device work
//! and memory allocations ran under, shared by the host's allocation events and the
//! device tracers' kernels.

/// XProf's `tf_op` for work done inside `scopes` (annotation names, outermost first):
/// the names joined by `/`, then `:` and the innermost name as the op type, e.g.
/// `["block", "attn"]` → `block/attn:attn`. XProf parses it as a JAX-style op
/// (`TfOp{name: "block/attn", type: "attn"}`): Kernel Stats' op name is `block/attn`,
/// Framework Op Stats has a row for it of type `attn`, the GPU plane gets "Framework
/// Name Scope" (`block`) and "Framework Ops" (`attn`) lines, and the Memory Profile's
/// breakdown names an allocation's op by it.
///
/// Characters XProf's op-name pattern does not take (`[A-Za-z0-9_.>-]`, as `/` and
/// `:` separate scopes and type) become `_`, so one annotation is one scope level;
/// the type keeps `[A-Za-z0-9_]`, and is lowercased where it would otherwise parse as
/// neither a TensorFlow type (`MatMul`) nor a JAX one (`attn`), so the whole string
/// always parses as an op rather than XProf's "unknown". `None` when every name is
/// empty.
///
/// ```
/// use profiler_core::xspace::tf_op;
/// assert_eq!(tf_op(&["forward", "block", "attn"]).as_deref(), Some("forward/block/attn:attn"));
/// assert_eq!(tf_op(&["model", "dense", "MatMul"]).as_deref(), Some("model/dense/MatMul:MatMul"));
/// assert_eq!(tf_op(&[]), None);
/// ```
pub fn tf_op(scopes: &[&str]) -> Option<String> {
    let segments: Vec<String> = scopes
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '>' | '-') {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .collect();
    let innermost = scopes.iter().rev().find(|s| !s.is_empty())?;
    let name = segments.join("/");
    // TensorFlow's name pattern; a JAX-style op has none.
    let tf_name = name.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '.');
    let mut ty: String = innermost
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let tf_type = ty.starts_with(|c: char| c.is_ascii_uppercase() || c == '_');
    let jax_type = ty.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && !ty.contains(|c: char| c.is_ascii_uppercase());
    if !(jax_type || (tf_type && tf_name)) {
        ty.make_ascii_lowercase();
        if ty.starts_with(|c: char| c.is_ascii_digit()) {
            ty.insert(0, '_');
        }
    }
    Some(format!("{name}:{ty}"))
}

#[cfg(test)]
mod tests {
    use super::tf_op;

    #[test]
    fn tf_op_joins_the_stack_and_types_it_with_the_innermost_name() {
        assert_eq!(
            tf_op(&["block", "attn"]).as_deref(),
            Some("block/attn:attn")
        );
        assert_eq!(tf_op(&["attn"]).as_deref(), Some("attn:attn"));
        assert_eq!(tf_op(&[]), None);
        assert_eq!(tf_op(&[""]), None);
        // A TensorFlow-style type stays as it is.
        assert_eq!(
            tf_op(&["model", "dense", "MatMul"]).as_deref(),
            Some("model/dense/MatMul:MatMul")
        );
        // Characters XProf's patterns do not take.
        assert_eq!(
            tf_op(&["encoder/layer 0", "attn-softmax"]).as_deref(),
            Some("encoder_layer_0/attn-softmax:attn_softmax")
        );
        assert_eq!(tf_op(&["a:b", "x#1"]).as_deref(), Some("a_b/x_1:x_1"));
        // Mixed case, or a leading digit, would parse as neither kind of type.
        assert_eq!(
            tf_op(&["layerNorm"]).as_deref(),
            Some("layerNorm:layernorm")
        );
        assert_eq!(tf_op(&["1x1"]).as_deref(), Some("1x1:_1x1"));
        // A name TensorFlow's pattern refuses needs a JAX-style type.
        assert_eq!(
            tf_op(&["_private", "Dense"]).as_deref(),
            Some("_private/Dense:dense")
        );
    }
}
