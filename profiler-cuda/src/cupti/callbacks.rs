//! CUPTI's callback API: the one subscriber prof holds while a session traces the GPU,
//! the functions it is told about, and the callback itself.
//!
//! The callback is the launch path: CUPTI calls it on entry to and exit from every
//! CUDA function subscribed to, on the calling thread, so what it does is added to
//! every launch. For the driver and runtime domains it hands the call to
//! [`calls::on_api`] (two clock reads, the thread's annotation stack, one record in the
//! thread's own log: no lock, no allocation, no call back into CUPTI). Only graph
//! launches ask CUPTI for the executable graph's id, and only the resource domain's
//! graph events, which come once per node built, take a lock.

#![allow(unsafe_code)]

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Once;

use cudarc::cupti::sys as cupti;
use cudarc::driver::sys as driver;

use crate::api::{self, GRAPH_LAUNCH, INSTANTIATE, KERNEL_LAUNCH, RECORD};
use crate::calls::{self, ApiDomain, Site};
use crate::graphs::{self, GraphNote};

/// Callback ids scanned in each API domain: above the highest any CUDA release has
/// used (868 driver ids in 13.0).
const CBID_SCAN: usize = 2048;

/// [`api::flags`] per callback id, per domain, filled when the tracer starts (names do
/// not change while a process runs); read with one relaxed load in the callback.
static DRIVER_FLAGS: [AtomicU8; CBID_SCAN] = [const { AtomicU8::new(0) }; CBID_SCAN];
static RUNTIME_FLAGS: [AtomicU8; CBID_SCAN] = [const { AtomicU8::new(0) }; CBID_SCAN];
/// The tables are filled once per process: the first session pays for the 4096 name
/// lookups, later ones only enable their functions.
static FILLED: Once = Once::new();

fn fill_flags() {
    FILLED.call_once(|| {
        for domain in [ApiDomain::Driver, ApiDomain::Runtime] {
            let cupti_domain = cupti_domain(domain);
            for (cbid, slot) in flags_of(domain).iter().enumerate().skip(1) {
                let flags = callback_name(cupti_domain, cbid as u32).map_or(0, |n| api::flags(&n));
                slot.store(flags, Ordering::Relaxed);
            }
        }
    });
}

/// Sets what the callback knows of function `cbid` of `domain` from its name, as the
/// tracer does from CUPTI's names when it starts: for tests and benchmarks that feed
/// the callback synthetic data where no CUPTI can name the functions. Only
/// [`crate::synthetic`] hands it out, so it exists only where that module does.
#[cfg(any(test, feature = "synthetic"))]
#[doc(hidden)]
pub fn set_function_name(domain: ApiDomain, cbid: u32, name: &str) {
    if let Some(slot) = flags_of(domain).get(cbid as usize) {
        slot.store(api::flags(name), Ordering::Relaxed);
    }
}

fn flags_of(domain: ApiDomain) -> &'static [AtomicU8; CBID_SCAN] {
    match domain {
        ApiDomain::Driver => &DRIVER_FLAGS,
        ApiDomain::Runtime => &RUNTIME_FLAGS,
    }
}

/// The CUPTI domain of an API domain.
pub(super) fn cupti_domain(domain: ApiDomain) -> cupti::CUpti_CallbackDomain {
    match domain {
        ApiDomain::Driver => cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API,
        ApiDomain::Runtime => cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API,
    }
}

/// CUPTI's name of callback `cbid` in `domain`, if it has one.
pub(super) fn callback_name(domain: cupti::CUpti_CallbackDomain, cbid: u32) -> Option<String> {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: valid out-pointer; CUPTI returns a static string on success and an error
    // for ids it does not know.
    let named = unsafe { cupti::cuptiGetCallbackName(domain, cbid, &mut name) }
        .result()
        .is_ok();
    if !named || name.is_null() {
        return None;
    }
    // SAFETY: as above.
    Some(
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// A live subscription; dropping it unsubscribes.
pub(super) struct Subscription(cupti::CUpti_SubscriberHandle);

// SAFETY: the handle is an opaque token CUPTI accepts from any thread.
unsafe impl Send for Subscription {}

impl Drop for Subscription {
    fn drop(&mut self) {
        // SAFETY: the handle came from `cuptiSubscribe` and is unsubscribed once.
        let _ = unsafe { cupti::cuptiUnsubscribe(self.0) };
    }
}

/// Why subscribing failed, as the profile's warning says it.
pub(super) fn subscribe_failure(e: cupti::CUptiResult) -> String {
    if e == cupti::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED {
        "prof: no GPU trace: CUPTI already has a subscriber in this process (another profiler such as Nsight Systems, torch.profiler or a second tracer holds it, and CUPTI allows one: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED); host tracing goes on".to_owned()
    } else {
        format!("prof: no GPU trace: cuptiSubscribe failed ({e:?}); host tracing goes on")
    }
}

/// Subscribes prof's callback and turns on the functions to record: the driver
/// functions [`api::flags`] marks [`RECORD`], or both API domains whole with `all`; and
/// the graph events of the resource domain.
///
/// The driver domain only, as TSL subscribes: every runtime function reaches the
/// driver through its public entry points, which CUPTI reports too, with the runtime
/// call's correlation id (on an H200, cuBLAS's 200 `cudaLaunchKernelExC` came with 200
/// `cuLaunchKernelEx`). Both would be two callbacks, and two host events, per launch.
pub(super) fn subscribe(all: bool) -> Result<Subscription, String> {
    let mut handle: cupti::CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: valid out-pointer; `callback` has CUPTI's signature and lives for the
    // whole process.
    unsafe { cupti::cuptiSubscribe(&mut handle, Some(callback), std::ptr::null_mut()) }
        .result()
        .map_err(|e| subscribe_failure(e.0))?;
    let subscription = Subscription(handle);
    fill_flags();
    for domain in [ApiDomain::Driver, ApiDomain::Runtime] {
        let table = flags_of(domain);
        let cupti_domain = cupti_domain(domain);
        for (cbid, slot) in table.iter().enumerate().skip(1) {
            if !all && domain == ApiDomain::Driver && slot.load(Ordering::Relaxed) & RECORD != 0 {
                // SAFETY: a plain call with an id CUPTI named.
                let on =
                    unsafe { cupti::cuptiEnableCallback(1, handle, cupti_domain, cbid as u32) };
                on.result().map_err(|e| {
                    format!("prof: no GPU trace: cuptiEnableCallback failed ({:?}); host tracing goes on", e.0)
                })?;
            }
        }
        if all {
            // SAFETY: a plain call on our subscription.
            unsafe { cupti::cuptiEnableDomain(1, handle, cupti_domain) }
                .result()
                .map_err(|e| {
                    format!(
                        "prof: no GPU trace: cuptiEnableDomain failed ({:?}); host tracing goes on",
                        e.0
                    )
                })?;
        }
    }
    use cupti::CUpti_CallbackIdResource as R;
    for event in [
        R::CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
        R::CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
        R::CUPTI_CBID_RESOURCE_GRAPH_CLONED,
        R::CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,
    ] {
        // Graph attribution is lost without them, the rest of the trace is not: a
        // refusal is not fatal.
        // SAFETY: a plain call on our subscription.
        let _ = unsafe {
            cupti::cuptiEnableCallback(
                1,
                handle,
                cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE,
                event as u32,
            )
        };
    }
    Ok(subscription)
}

/// The callback prof subscribes with: API calls of the driver and runtime domains go
/// to [`calls::on_api`], graph events of the resource domain to [`crate::graphs`].
///
/// Public as `synthetic::callback` (feature `synthetic`), so that benchmarks and tests
/// can feed it synthetic `CUpti_CallbackData`; nothing else calls it.
///
/// # Safety
/// `cbdata` points to the domain's callback data as CUPTI passes it: a
/// `CUpti_CallbackData` for the API domains, a `CUpti_ResourceData` for the resource
/// domain.
// Without the feature only CUPTI calls it, through the pointer `subscribe` hands over.
#[cfg_attr(not(any(test, feature = "synthetic")), allow(unreachable_pub))]
pub unsafe extern "C" fn callback(
    _userdata: *mut c_void,
    domain: cupti::CUpti_CallbackDomain,
    cbid: cupti::CUpti_CallbackId,
    cbdata: *const c_void,
) {
    use cupti::CUpti_CallbackDomain as D;
    let api_domain = match domain {
        D::CUPTI_CB_DOMAIN_DRIVER_API => ApiDomain::Driver,
        D::CUPTI_CB_DOMAIN_RUNTIME_API => ApiDomain::Runtime,
        D::CUPTI_CB_DOMAIN_RESOURCE => {
            // SAFETY: the caller's promise for this domain.
            unsafe { resource(cbid, cbdata.cast()) };
            return;
        }
        _ => return,
    };
    if cbdata.is_null() {
        return;
    }
    // SAFETY: the caller's promise for the API domains.
    let data = unsafe { &*cbdata.cast::<cupti::CUpti_CallbackData>() };
    let site = if data.callbackSite == cupti::CUpti_ApiCallbackSite::CUPTI_API_ENTER {
        Site::Enter
    } else {
        Site::Exit
    };
    let flags = flags_of(api_domain)
        .get(cbid as usize)
        .map_or(0, |f| f.load(Ordering::Relaxed));
    let mut graph_exec_id = 0;
    if flags & (GRAPH_LAUNCH | INSTANTIATE) != 0 {
        if flags & INSTANTIATE != 0 {
            graphs::set_instantiating(site == Site::Enter);
        }
        if flags & GRAPH_LAUNCH != 0 && site == Site::Exit && !data.functionParams.is_null() {
            // `cuGraphLaunch_params` and `cudaGraphLaunch_params` both begin with the
            // executable graph.
            // SAFETY: CUPTI's parameter struct of a graph launch, whose first field is
            // the `CUgraphExec`.
            let exec = unsafe { data.functionParams.cast::<driver::CUgraphExec>().read() };
            // SAFETY: valid out-pointer; an exec handle the call was given.
            let _ = unsafe { cupti::cuptiGetGraphExecId(exec, &mut graph_exec_id) };
        }
    }
    // SAFETY: CUPTI's per-call storage, the same on entry and exit.
    unsafe {
        calls::on_api(
            api_domain,
            cbid,
            site,
            data.correlationId,
            data.correlationData,
            graph_exec_id,
            api_domain == ApiDomain::Driver && flags & KERNEL_LAUNCH != 0,
        )
    }
}

/// A graph event of the resource domain.
///
/// # Safety
/// `data` is null or CUPTI's `CUpti_ResourceData` for a resource callback.
unsafe fn resource(cbid: cupti::CUpti_CallbackId, data: *const cupti::CUpti_ResourceData) {
    use cupti::CUpti_CallbackIdResource as R;
    // SAFETY: the caller's promise.
    let Some(data) = (unsafe { data.as_ref() }) else {
        return;
    };
    let graph = data.resourceDescriptor.cast::<cupti::CUpti_GraphData>();
    // SAFETY: for the graph events, the descriptor is a `CUpti_GraphData`.
    let Some(graph) = (unsafe { graph.as_ref() }) else {
        return;
    };
    let graph_id = |g: driver::CUgraph| {
        let mut id = 0u32;
        // SAFETY: valid out-pointer; a graph handle CUPTI handed us.
        let _ = unsafe { cupti::cuptiGetGraphId(g, &mut id) };
        id
    };
    let node_id = |n: driver::CUgraphNode| {
        let mut id = 0u64;
        // SAFETY: valid out-pointer; a node handle CUPTI handed us.
        let _ = unsafe { cupti::cuptiGetGraphNodeId(n, &mut id) };
        id
    };
    match cbid {
        c if c == R::CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED as u32 => graphs::node_created(
            graph_id(graph.graph),
            node_id(graph.node),
            graph.nodeType as u32,
            calls::thread_id(),
        ),
        c if c == R::CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED as u32 => {
            graphs::note(GraphNote::NodeCloned {
                graph_id: graph_id(graph.graph),
                node_id: node_id(graph.node),
                original_node_id: node_id(graph.originalNode),
            })
        }
        c if c == R::CUPTI_CBID_RESOURCE_GRAPH_CLONED as u32 => {
            graphs::note(GraphNote::GraphCloned {
                graph_id: graph_id(graph.graph),
                original_graph_id: graph_id(graph.originalGraph),
            })
        }
        c if c == R::CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED as u32 => {
            let mut exec_id = 0u32;
            // SAFETY: valid out-pointer; the exec handle CUPTI handed us.
            let _ = unsafe { cupti::cuptiGetGraphExecId(graph.graphExec, &mut exec_id) };
            graphs::note(GraphNote::ExecCreated {
                exec_id,
                graph_id: graph_id(graph.graph),
            })
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_cupti_is_named_in_the_warning() {
        let taken =
            subscribe_failure(cupti::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
        assert!(taken.contains("already has a subscriber"), "{taken}");
        assert!(taken.contains("Nsight Systems"), "{taken}");
        assert!(taken.contains("host tracing goes on"), "{taken}");
        let other = subscribe_failure(cupti::CUptiResult::CUPTI_ERROR_NOT_INITIALIZED);
        assert!(other.contains("CUPTI_ERROR_NOT_INITIALIZED"), "{other}");
    }
}
