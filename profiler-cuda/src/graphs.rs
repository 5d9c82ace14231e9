//! CUDA graphs as the tracer sees them being built: which node was made under which
//! annotation, and which executable node is a clone of which.
//!
//! A graph captured once (stream capture, or `cuGraphAdd*Node`) and replayed every
//! step runs kernels whose records carry only the graph's and the node's ids, and the
//! correlation id of the replay's `cuGraphLaunch`. The layer that launched each kernel
//! is the one open when its node was *captured*: CUPTI's resource callbacks report each
//! node as it is created (on the capturing thread, inside the capture's launch call),
//! and each clone `cuGraphInstantiate` makes of it, so the tracer notes, per node, the
//! annotation open on the thread then and the original node of each clone. The
//! conversion follows a kernel's node back to its original and names the kernel after
//! the capture's annotation ([`crate::convert`]).
//!
//! Graph building is rare next to launching (once per capture, not per replay), so the
//! notes go into one locked list; launches never touch it.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use profiler_core::tracer::{self, ScopeId};

use crate::scope_stack;

/// What the tracer noted about one graph, node or executable graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphNote {
    /// A node was created (`CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED`), outside
    /// instantiation: by stream capture or a `cuGraphAdd*Node` call.
    NodeCreated {
        /// `cuptiGetGraphId` of its graph.
        graph_id: u32,
        /// `cuptiGetGraphNodeId`.
        node_id: u64,
        /// `CUgraphNodeType` (0 kernel, 1 memcpy, 2 memset, ...).
        node_type: u32,
        /// When, on prof's clock.
        timestamp: u64,
        /// The OS thread that created it.
        thread_id: u32,
        /// The annotation open on that thread then.
        scope: Option<ScopeId>,
    },
    /// A node was cloned (`CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED`): by
    /// `cuGraphInstantiate` into an executable graph, or by `cuGraphClone`.
    NodeCloned {
        /// The clone's graph id.
        graph_id: u32,
        /// The clone.
        node_id: u64,
        /// The node it was cloned from.
        original_node_id: u64,
    },
    /// A graph was cloned (`CUPTI_CBID_RESOURCE_GRAPH_CLONED`).
    GraphCloned {
        /// The clone.
        graph_id: u32,
        /// The graph it was cloned from.
        original_graph_id: u32,
    },
    /// An executable graph was instantiated (`CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED`).
    ExecCreated {
        /// `cuptiGetGraphExecId`.
        exec_id: u32,
        /// The graph it was instantiated from.
        graph_id: u32,
    },
}

/// Whether notes are being taken (a session with the tracer runs).
static RECORDING: AtomicBool = AtomicBool::new(false);
static NOTES: Mutex<Vec<GraphNote>> = Mutex::new(Vec::new());

fn notes() -> MutexGuard<'static, Vec<GraphNote>> {
    NOTES.lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    /// Inside a `cuGraphInstantiate*` call on this thread: the nodes it creates are
    /// the executable graph's own, reported again as clones of the originals.
    static INSTANTIATING: Cell<bool> = const { Cell::new(false) };
}

/// Starts taking notes for a session, forgetting the last one's.
pub fn begin_session() {
    notes().clear();
    RECORDING.store(true, Ordering::Release);
}

/// Stops taking notes and hands over the session's.
pub fn end_session() -> Vec<GraphNote> {
    RECORDING.store(false, Ordering::Release);
    std::mem::take(&mut *notes())
}

/// Marks this thread as inside (or out of) a `cuGraphInstantiate*` call.
pub fn set_instantiating(inside: bool) {
    let _ = INSTANTIATING.try_with(|i| i.set(inside));
}

/// Notes a node created on this thread now, with the annotation open on it; nodes
/// made while instantiating are left out (their clones say where they came from).
pub fn node_created(graph_id: u32, node_id: u64, node_type: u32, thread_id: u32) {
    if !RECORDING.load(Ordering::Acquire) || INSTANTIATING.try_with(Cell::get).unwrap_or(false) {
        return;
    }
    let note = GraphNote::NodeCreated {
        graph_id,
        node_id,
        node_type,
        timestamp: tracer::clock_ns(),
        thread_id,
        scope: scope_stack::innermost(),
    };
    notes().push(note);
}

/// Notes anything else about a graph.
pub fn note(note: GraphNote) {
    if RECORDING.load(Ordering::Acquire) {
        notes().push(note);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_carry_the_capturing_annotation_and_instantiation_is_left_to_clones() {
        let _one = crate::calls::tests::SESSION
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        node_created(1, 10, 0, 5); // before the session
        begin_session();
        (scope_stack::HOOK.enter)(8);
        node_created(1, 11, 0, 5);
        (scope_stack::HOOK.exit)();
        set_instantiating(true);
        node_created(2, 12, 0, 5);
        note(GraphNote::NodeCloned {
            graph_id: 2,
            node_id: 12,
            original_node_id: 11,
        });
        set_instantiating(false);
        let notes = end_session();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(matches!(
            notes[0],
            GraphNote::NodeCreated {
                node_id: 11,
                scope: Some(ScopeId { seq: 8, .. }),
                ..
            }
        ));
        assert!(matches!(
            notes[1],
            GraphNote::NodeCloned {
                node_id: 12,
                original_node_id: 11,
                ..
            }
        ));
        note(GraphNote::ExecCreated {
            exec_id: 1,
            graph_id: 2,
        }); // after the session
        assert!(end_session().is_empty());
    }
}
