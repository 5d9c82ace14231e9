//! OTLP export against in-process receivers: the id, parent and timestamp rules, both
//! protocols, and bounded failures. CI also sends to a real collector (rotel).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prof_test_support::spaces;
use profiler_core::ErrorKind;
use profiler_export::otlp::{self, OtlpOptions, Protocol};
use prost::Message;

type Received = Arc<Mutex<Vec<ExportTraceServiceRequest>>>;

struct Receiver(Received);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.lock().expect("lock").push(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// A gRPC collector on 127.0.0.1, serving until the test process ends.
fn grpc_receiver() -> (SocketAddr, Received) {
    let received = Received::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let service = TraceServiceServer::new(Receiver(received.clone()));
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            listener.set_nonblocking(true).expect("nonblocking");
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await
                .expect("serve");
        });
    });
    (addr, received)
}

/// An OTLP/HTTP collector on 127.0.0.1 answering `requests` POSTs.
fn http_receiver(
    requests: usize,
) -> (
    SocketAddr,
    std::thread::JoinHandle<Vec<(String, ExportTraceServiceRequest)>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let handle = std::thread::spawn(move || {
        let mut got = Vec::new();
        while got.len() < requests {
            let (stream, _) = listener.accept().expect("accept");
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            let mut reader = BufReader::new(stream);
            // Keep-alive: several requests may come on one connection.
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                let mut len = 0;
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).expect("header");
                    if header.trim().is_empty() {
                        break;
                    }
                    let lower = header.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        len = v.trim().parse().expect("length");
                    }
                }
                let mut body = vec![0; len];
                reader.read_exact(&mut body).expect("body");
                let request =
                    ExportTraceServiceRequest::decode(body.as_slice()).expect("protobuf body");
                let reply = ExportTraceServiceResponse::default().encode_to_vec();
                let stream = reader.get_mut();
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: {}\r\n\r\n",
                    reply.len()
                )
                .expect("reply");
                stream.write_all(&reply).expect("reply body");
                got.push((path, request));
                if got.len() == requests {
                    break;
                }
            }
        }
        got
    });
    (addr, handle)
}

fn spans(requests: &[ExportTraceServiceRequest]) -> Vec<Span> {
    requests
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| s.spans.clone())
        .collect()
}

fn attr<'s>(span: &'s Span, key: &str) -> Option<&'s Value> {
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref()?.value.as_ref())
}

fn check_spans(requests: &[ExportTraceServiceRequest]) {
    let spans = spans(requests);
    assert_eq!(spans.len() as u64, spaces::SLICES);
    let by_id: HashMap<_, _> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    assert_eq!(by_id.len(), spans.len(), "span ids are unique");
    for s in &spans {
        assert_eq!(s.trace_id.len(), 16, "{}", s.name);
        assert_eq!(s.span_id.len(), 8, "{}", s.name);
        assert!(s.trace_id.iter().any(|&b| b != 0) && s.span_id.iter().any(|&b| b != 0));
        assert!(s.start_time_unix_nano >= spaces::START_UNIX_NS);
        assert!(s.end_time_unix_nano >= s.start_time_unix_nano);
        if !s.parent_span_id.is_empty() {
            let parent = by_id[&s.parent_span_id];
            assert_eq!(
                parent.trace_id, s.trace_id,
                "{} is in its parent's trace",
                s.name
            );
            assert!(parent.start_time_unix_nano <= s.start_time_unix_nano);
            assert!(parent.end_time_unix_nano >= s.end_time_unix_nano);
        }
    }
    let named = |n: &str| *spans.iter().find(|s| s.name == n).as_ref().expect(n);
    let train = named("Train");
    assert!(train.parent_span_id.is_empty());
    assert_eq!(train.start_time_unix_nano, spaces::START_UNIX_NS + 1000);
    assert_eq!(train.end_time_unix_nano, spaces::START_UNIX_NS + 2000);
    assert_eq!(attr(train, "step_num"), Some(&Value::IntValue(3)));
    assert_eq!(
        attr(train, "thread.name"),
        Some(&Value::StringValue("main".into()))
    );
    let launch = named("cuLaunchKernel");
    assert_eq!(launch.parent_span_id, named("backward").span_id);
    assert_eq!(launch.trace_id, train.trace_id);
    assert_ne!(
        named("gemm_kernel").trace_id,
        train.trace_id,
        "another root, another trace"
    );
    let bwd = named("backward");
    assert_eq!(
        attr(bwd, "bytes"),
        Some(&Value::StringValue(u64::MAX.to_string()))
    );
    assert_eq!(attr(named("forward"), "lr"), Some(&Value::DoubleValue(0.5)));
    let resource = requests[0].resource_spans[0]
        .resource
        .as_ref()
        .expect("resource");
    let res: HashMap<_, _> = resource
        .attributes
        .iter()
        .map(|a| {
            (
                a.key.as_str(),
                a.value.as_ref().and_then(|v| v.value.clone()),
            )
        })
        .collect();
    assert_eq!(
        res["service.name"],
        Some(Value::StringValue("trainer".into()))
    );
    assert_eq!(
        res["host.name"],
        Some(Value::StringValue("worker:0".into()))
    );
}

#[test]
fn grpc_export_keeps_ids_parents_and_times() {
    let (addr, received) = grpc_receiver();
    let options = OtlpOptions::new(format!("http://{addr}"))
        .service_name("trainer")
        .batch_size(5);
    let report = otlp::export(&spaces::space(), &options).expect("export");
    assert_eq!(report.spans, spaces::SLICES);
    assert_eq!(report.requests, 3, "12 spans in batches of 5");
    // Top-level events: Train, dequeue, orphan, overlap_a, overlap_b (its own lane),
    // gemm_kernel and stream_sync.
    assert_eq!(report.traces, 7);
    check_spans(&received.lock().expect("lock"));
    // Exporting again gives the same ids: collectors deduplicate a re-sent profile.
    let first: Vec<_> = spans(&received.lock().expect("lock"))
        .into_iter()
        .map(|s| s.span_id)
        .collect();
    otlp::export(&spaces::space(), &options).expect("again");
    let all = spans(&received.lock().expect("lock"));
    let second: Vec<_> = all[first.len()..]
        .iter()
        .map(|s| s.span_id.clone())
        .collect();
    assert_eq!(first, second);
}

#[test]
fn http_protobuf_export_posts_to_v1_traces() {
    let (addr, receiver) = http_receiver(1);
    let options = OtlpOptions::new(format!("http://{addr}"))
        .protocol(Protocol::HttpProtobuf)
        .service_name("trainer");
    let report = otlp::export(&spaces::space(), &options).expect("export");
    assert_eq!(report.spans, spaces::SLICES);
    let got = receiver.join().expect("receiver");
    assert_eq!(got[0].0, "/v1/traces");
    let requests: Vec<_> = got.into_iter().map(|(_, r)| r).collect();
    check_spans(&requests);
}

#[test]
fn an_unreachable_collector_is_a_prompt_named_error() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    }; // closed again: connections are refused
    for protocol in [Protocol::Grpc, Protocol::HttpProtobuf] {
        let endpoint = format!("http://127.0.0.1:{port}");
        let options = OtlpOptions::new(&endpoint)
            .protocol(protocol)
            .timeout(Duration::from_secs(3));
        let began = Instant::now();
        let err = otlp::export(&spaces::space(), &options).expect_err("nobody listens");
        assert!(
            matches!(
                err.kind(),
                ErrorKind::Unavailable | ErrorKind::DeadlineExceeded
            ),
            "{protocol}: {err}"
        );
        assert!(err.to_string().contains(&endpoint), "{err}");
        assert!(err.to_string().contains("after 0 spans"), "{err}");
        // Bounded by the stated timeout (with slack for a loaded machine), never a hang.
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "{protocol}: {:?}",
            began.elapsed()
        );
    }
}

#[test]
fn a_silent_collector_hits_the_deadline() {
    // Accepts connections and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().take(16) {
            held.push(s);
        }
    });
    let options = OtlpOptions::new(format!("http://{addr}"))
        .protocol(Protocol::HttpProtobuf)
        .timeout(Duration::from_millis(500));
    let err = otlp::export(&spaces::space(), &options).expect_err("no answer");
    assert_eq!(err.kind(), ErrorKind::DeadlineExceeded, "{err}");
}
