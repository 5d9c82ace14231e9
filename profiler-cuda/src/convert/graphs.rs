//! CUDA graphs in the conversion: which layer each replayed kernel belongs to, which
//! graph each launch ran, and, on request, every node with where it came from.
//!
//! A kernel that ran inside a graph carries the graph's and its node's ids; its node is
//! one of the executable graph's, a clone (by `cuGraphInstantiate`, maybe by
//! `cuGraphClone` before) of the node made at capture. [`Graphs`] follows each clone
//! back to that original, whose note says when it was captured and on which thread's
//! line, and finds the annotations open there then: the kernel's `tf_op` and
//! `annotation` are the capture's, while its step stays the replay's (the launch's),
//! so XProf counts graph kernels under their layers in the step that ran them.

use super::maps::HashMap;

use profiler_core::xspace::ps;

use crate::activity::{Activity, DeviceTrace};
use crate::graphs::GraphNote;

use profiler_core::xspace::{Enclosing, HostScopes};

/// A node as it was made.
struct Original {
    graph_id: u32,
    node_type: u32,
    /// What the capture ran under, if anything was open.
    captured_in: Option<Enclosing>,
}

/// What the tracer noted about a session's graphs, resolved.
pub(super) struct Graphs {
    originals: HashMap<u64, Original>,
    /// Clone → the node it was cloned from.
    cloned_from: HashMap<u64, u64>,
    /// The graph each clone belongs to.
    clone_graph: HashMap<u64, u32>,
    /// Executable graph → the graph it was instantiated from.
    exec_graph: HashMap<u32, u32>,
    /// Launch correlation id → executable graph.
    launch_exec: HashMap<u32, u32>,
}

/// How many clone links are followed at most (a clone of a clone of ...): more than
/// any real program makes, and a bound against a cycle in a damaged trace.
const MAX_CLONE_DEPTH: usize = 64;

impl Graphs {
    pub(super) fn new(
        trace: &DeviceTrace,
        scopes: &mut HostScopes,
        to_session_ns: &dyn Fn(u64) -> Option<u64>,
    ) -> Graphs {
        let mut graphs = Graphs {
            originals: HashMap::default(),
            cloned_from: HashMap::default(),
            clone_graph: HashMap::default(),
            exec_graph: HashMap::default(),
            launch_exec: trace.graph_launches.iter().copied().collect(),
        };
        for note in &trace.graph_notes {
            match note {
                GraphNote::NodeCreated {
                    graph_id,
                    node_id,
                    node_type,
                    timestamp,
                    scope,
                    ..
                } => {
                    let captured_in = scope
                        .and_then(|s| scopes.enclosing(s.line, ps(to_session_ns(*timestamp)?)));
                    graphs.originals.insert(
                        *node_id,
                        Original {
                            graph_id: *graph_id,
                            node_type: *node_type,
                            captured_in,
                        },
                    );
                }
                GraphNote::NodeCloned {
                    graph_id,
                    node_id,
                    original_node_id,
                } => {
                    graphs.cloned_from.insert(*node_id, *original_node_id);
                    graphs.clone_graph.insert(*node_id, *graph_id);
                }
                GraphNote::ExecCreated { exec_id, graph_id } => {
                    graphs.exec_graph.insert(*exec_id, *graph_id);
                }
                GraphNote::GraphCloned { .. } => {}
            }
        }
        graphs
    }

    /// The node `node` was cloned from, through any number of clones, and that node.
    fn original(&self, node: u64) -> Option<(u64, &Original)> {
        let mut at = node;
        for _ in 0..MAX_CLONE_DEPTH {
            if let Some(original) = self.originals.get(&at) {
                return Some((at, original));
            }
            at = *self.cloned_from.get(&at)?;
        }
        None
    }

    /// What the capture of `node` ran under (`None`: a node made before the session
    /// or outside any annotation, whose work then takes its launch's annotation).
    pub(super) fn captured_in(&self, node: u64) -> Option<&Enclosing> {
        self.original(node)?.1.captured_in.as_ref()
    }

    /// Per launch correlation id, the graph the launch ran.
    pub(super) fn graph_of_launch(&self) -> HashMap<u32, u32> {
        self.launch_exec
            .iter()
            .filter_map(|(&correlation, exec)| Some((correlation, *self.exec_graph.get(exec)?)))
            .collect()
    }

    /// The executable graph a launch ran.
    pub(super) fn exec_of_launch(&self, correlation_id: u32) -> Option<u32> {
        self.launch_exec.get(&correlation_id).copied()
    }

    /// `gpu_dump_graph_node_mapping`: per device, a line per node of each graph whose
    /// work ran on it (every node noted: originals and their clones), sorted:
    /// `graph G node N: clone of node O, <kind>, captured under <tf_op>`.
    pub(super) fn mapping(&self, trace: &DeviceTrace) -> HashMap<u32, Vec<String>> {
        let mut device_of_graph: HashMap<u32, u32> = HashMap::default();
        // What each original node ran as, from its work's records: CUPTI's node type at
        // creation is not always filled during stream capture (on an H200, a captured
        // copy's node read as a kernel's).
        let mut ran_as: HashMap<u64, &'static str> = HashMap::default();
        for activity in &trace.activities {
            let (at, kind) = match activity {
                Activity::Kernel { at, .. } => (at, "kernel"),
                Activity::Memcpy { at, .. } => (at, "memcpy"),
                Activity::Memset { at, .. } => (at, "memset"),
                _ => continue,
            };
            if at.graph_node_id != 0 {
                if let Some((original_id, original)) = self.original(at.graph_node_id) {
                    device_of_graph
                        .entry(original.graph_id)
                        .or_insert(at.device_id);
                    ran_as.insert(original_id, kind);
                }
                device_of_graph.entry(at.graph_id).or_insert(at.device_id);
            }
        }
        let describe = |node: u64, graph: u32| -> Option<(u32, String)> {
            let (original_id, original) = self.original(node)?;
            let device = device_of_graph
                .get(&graph)
                .or_else(|| device_of_graph.get(&original.graph_id))
                .copied()
                .unwrap_or(0);
            let from = if original_id == node {
                "made".to_owned()
            } else {
                format!("clone of node {original_id}")
            };
            let under = original
                .captured_in
                .as_ref()
                .map(|c| c.tf_op.as_deref().unwrap_or(&c.annotation).to_owned())
                .unwrap_or_else(|| "(no annotation)".to_owned());
            Some((
                device,
                format!(
                    "graph {graph} node {node}: {from}, {}, captured under {under}",
                    ran_as
                        .get(&original_id)
                        .copied()
                        .unwrap_or_else(|| node_kind(original.node_type))
                ),
            ))
        };
        let mut lines: HashMap<u32, Vec<String>> = HashMap::default();
        let originals = self.originals.iter().map(|(&n, o)| (n, o.graph_id));
        let clones = self.clone_graph.iter().map(|(&n, &g)| (n, g));
        for (node, graph) in originals.chain(clones) {
            if let Some((device, line)) = describe(node, graph) {
                lines.entry(device).or_default().push(line);
            }
        }
        for list in lines.values_mut() {
            list.sort();
        }
        lines
    }
}

/// `CUgraphNodeType`'s names.
fn node_kind(node_type: u32) -> &'static str {
    match node_type {
        0 => "kernel",
        1 => "memcpy",
        2 => "memset",
        3 => "host",
        4 => "child graph",
        5 => "empty",
        6 => "event wait",
        7 => "event record",
        8 => "semaphore signal",
        9 => "semaphore wait",
        10 => "mem alloc",
        11 => "mem free",
        12 => "batch mem op",
        13 => "conditional",
        _ => "node",
    }
}
