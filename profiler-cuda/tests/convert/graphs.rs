//! CUDA graphs: replayed kernels under the ops of their capture, whole-graph launches,
//! the node mapping, and a node's kind.

use profiler_core::schema;
use profiler_core::xspace::XStatValue;
use profiler_cuda::activity::Activity;
use profiler_cuda::convert::{add_to_space, ANNOTATION, HOST_STEP_NUM, TF_OP};
use profiler_cuda::synthetic::{self};

use crate::support::*;

#[test]
fn graph_kernels_carry_the_layer_of_their_capture_and_the_step_of_their_replay() {
    let (mut space, line, nodes, replays) = captured_and_replayed(3);
    let trace = synthetic::graph(line, &nodes, &replays, 500, false);
    add_to_space(&trace, &mut space, &Some);
    assert!(space.warnings.is_empty(), "{:?}", space.warnings);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    assert_eq!(
        tf_ops(gpu, "attn_kernel"),
        vec![Some("forward/attn:attn".to_owned()); 3]
    );
    assert_eq!(
        tf_ops(gpu, "mlp_kernel"),
        vec![Some("forward/mlp:mlp".to_owned()); 3]
    );
    for (i, (_, k)) in events(gpu, "mlp_kernel").into_iter().enumerate() {
        assert_eq!(
            stat(gpu, k, HOST_STEP_NUM),
            Some(&XStatValue::Int64(i as i64))
        );
        assert_eq!(text(gpu, k, ANNOTATION), Some("mlp"));
        assert_eq!(stat(gpu, k, "cuda_graph_id"), Some(&XStatValue::Uint64(1)));
        assert_eq!(
            stat(gpu, k, "cuda_graph_node_id"),
            Some(&XStatValue::Uint64(synthetic::EXEC_NODE + 1))
        );
        assert_eq!(
            stat(gpu, k, "correlation_id"),
            Some(&XStatValue::Uint64(500 + i as u64))
        );
    }
    // The replay's launch is on the host, in the step, with the graph's id and the
    // correlation its kernels carry (XProf's launch → kernel arrows).
    let host = space.plane(schema::HOST_PLANE).expect("host");
    let launches = events(host, "cuGraphLaunch");
    assert_eq!(launches.len(), 3);
    for (i, (_, e)) in launches.into_iter().enumerate() {
        assert_eq!(stat(host, e, "cuda_graph_id"), Some(&XStatValue::Uint64(1)));
        assert_eq!(
            stat(host, e, "correlation_id"),
            Some(&XStatValue::Uint64(500 + i as u64))
        );
    }
    // Without the capture's notes (a graph captured before the session) the kernels
    // take their launch's annotation.
    let (mut space, line, nodes, replays) = captured_and_replayed(1);
    let mut trace = synthetic::graph(line, &nodes, &replays, 500, false);
    trace.graph_notes.clear();
    add_to_space(&trace, &mut space, &Some);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    assert_eq!(
        tf_ops(gpu, "attn_kernel"),
        [Some("replay:replay".to_owned())]
    );
}

#[test]
fn whole_graph_launches_are_one_event_each_named_after_the_graph() {
    let (mut space, line, nodes, replays) = captured_and_replayed(2);
    let trace = synthetic::graph(line, &nodes, &replays, 700, true);
    add_to_space(&trace, &mut space, &Some);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    let launches = events(gpu, "CudaGraphExec:1");
    assert_eq!(launches.len(), 2);
    assert!(events(gpu, "attn_kernel").is_empty());
    let (_, e) = launches[1];
    assert_eq!(stat(gpu, e, "cuda_graph_id"), Some(&XStatValue::Uint64(1)));
    assert_eq!(
        stat(gpu, e, "cuda_graph_exec_id"),
        Some(&XStatValue::Uint64(u64::from(synthetic::GRAPH_EXEC_ID)))
    );
    assert_eq!(
        stat(gpu, e, "correlation_id"),
        Some(&XStatValue::Uint64(701))
    );
    assert_eq!(text(gpu, e, TF_OP), Some("replay:replay"));
    assert!(gpu.lines.iter().any(|l| l.name == "Stream #9(Graph)"));
}

#[test]
fn the_graph_node_mapping_names_every_node_and_its_capture() {
    let (mut space, line, nodes, replays) = captured_and_replayed(1);
    let mut trace = synthetic::graph(line, &nodes, &replays, 500, false);
    trace.dump_graph_node_mapping = true;
    add_to_space(&trace, &mut space, &Some);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    let Some(XStatValue::Str(mapping)) = gpu.find_stat(&gpu.stats, "cuda_graph_node_mapping")
    else {
        panic!("no mapping stat: {:?}", gpu.stats);
    };
    let lines: Vec<&str> = mapping.lines().collect();
    assert_eq!(
        lines,
        [
            "graph 1 node 100: made, kernel, captured under forward/attn:attn",
            "graph 1 node 101: made, kernel, captured under forward/mlp:mlp",
            "graph 2 node 200: clone of node 100, kernel, captured under forward/attn:attn",
            "graph 2 node 201: clone of node 101, kernel, captured under forward/mlp:mlp",
        ]
    );
    // Off by default.
    let (mut space, line, nodes, replays) = captured_and_replayed(1);
    add_to_space(
        &synthetic::graph(line, &nodes, &replays, 500, false),
        &mut space,
        &Some,
    );
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    assert!(gpu
        .find_stat(&gpu.stats, "cuda_graph_node_mapping")
        .is_none());
}

#[test]
fn a_graph_nodes_kind_is_what_its_work_ran_as() {
    // CUPTI's node type at capture may read 0 (kernel) for a copy node: the copy's own
    // record says what it is.
    let (mut space, line, nodes, replays) = captured_and_replayed(1);
    let mut trace = synthetic::graph(line, &nodes, &replays, 500, false);
    trace.dump_graph_node_mapping = true;
    // The mlp node's work is a copy.
    for a in &mut trace.activities {
        if let Activity::Kernel {
            name,
            at,
            start,
            end,
            ..
        } = a
        {
            if name == "mlp_kernel" {
                *a = Activity::Memcpy {
                    copy_kind: 8,
                    src_kind: 3,
                    dst_kind: 3,
                    bytes: 64,
                    start: *start,
                    end: *end,
                    at: *at,
                };
            }
        }
    }
    add_to_space(&trace, &mut space, &Some);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    let Some(XStatValue::Str(mapping)) = gpu.find_stat(&gpu.stats, "cuda_graph_node_mapping")
    else {
        panic!("no mapping");
    };
    assert!(
        mapping.contains("graph 1 node 101: made, memcpy, captured under forward/mlp:mlp"),
        "{mapping}"
    );
    assert!(
        mapping.contains("graph 2 node 201: clone of node 101, memcpy,"),
        "{mapping}"
    );
    assert!(
        mapping.contains("graph 1 node 100: made, kernel,"),
        "{mapping}"
    );
}
