//! The op a memory event is filed under, named as the time tables name it.
//!
//! prof's memory events carry two names for the annotations open where the memory was
//! allocated: `tf_op`, the whole stack in XProf's op syntax (`forward/dense_1_MatMul:
//! dense_1_matmul`, characters XProf's pattern refuses made `_`, as
//! [`profiler_core::xspace::tf_op`] writes it, so that XProf's Memory Profile can parse
//! it), and `region_type`, the innermost annotation's own name (`dense_1/MatMul`). The
//! time tables key rows by that name, so the memory tables do too: one op, one name.
//!
//! TensorFlow's and JAX's allocators write a `region_type` of their own (what the
//! memory is for, not an op); their `tf_op` is already the name their TraceMe rows
//! carry, and stays.

use profiler_core::xspace::tf_op;

/// The op to show for a memory event with stats `tf_op` and `region_type`: the
/// annotation name `region_type` when `tf_op` is the op prof writes for a stack
/// ending in it, else `tf_op`.
pub(crate) fn memory_op<'a>(op: Option<&'a str>, region_type: Option<&'a str>) -> Option<&'a str> {
    let op = op.filter(|s| !s.is_empty())?;
    let Some(innermost) = region_type.filter(|s| !s.is_empty()) else {
        return Some(op);
    };
    let Some(own) = tf_op(&[innermost]) else {
        return Some(op);
    };
    let written_by_prof = op == own
        || op
            .strip_suffix(own.as_str())
            .is_some_and(|scopes| scopes.ends_with('/'));
    Some(if written_by_prof { innermost } else { op })
}

#[cfg(test)]
mod tests {
    use super::memory_op;

    #[test]
    fn prof_ops_take_the_annotation_name_and_others_keep_tf_op() {
        let cases = [
            (
                Some("forward/dense_1_MatMul:dense_1_matmul"),
                Some("dense_1/MatMul"),
                Some("dense_1/MatMul"),
            ),
            (
                Some("backward:backward"),
                Some("backward"),
                Some("backward"),
            ),
            // TensorFlow's: region_type says what the memory is for.
            (
                Some("dense/MatMul:MatMul"),
                Some("output"),
                Some("dense/MatMul:MatMul"),
            ),
            (
                Some("dense/MatMul:MatMul"),
                None,
                Some("dense/MatMul:MatMul"),
            ),
            // A suffix that is not a whole scope is no match.
            (
                Some("xbackward:backward"),
                Some("backward"),
                Some("xbackward:backward"),
            ),
            (None, Some("Train"), None),
            (Some(""), None, None),
        ];
        for (op, region, want) in cases {
            assert_eq!(memory_op(op, region), want, "{op:?} {region:?}");
        }
    }
}
